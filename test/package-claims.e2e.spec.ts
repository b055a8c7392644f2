import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { claimPackage, installedVersion, releasePackage, type Run } from './fixtures/package/apt.js';
import { buildFixture, dpkg, purgeFixtures } from './support/apt-repo.js';

/** Unique to this file: other test files build and install their own fixtures at the same time. */
const PREFIX = 'florete-fixture-claim-';
const NAME = `${PREFIX}pkg`;

/**
 * The suites that install the project's own packages under their real names claim them first
 * (claimPackage), so that a run stopped between install and purge (a CI job killed at its time limit)
 * does not make every later run refuse, while a copy the machine installed itself is never removed.
 * Real dpkg with a fixture package standing in for the project's; the claims live in a folder of
 * this test's own.
 */
describe('claims on the packages tests install', () => {
  let work: string;
  let claims: string;
  const purged: string[] = [];
  const purge = async (name: string): Promise<Run> => {
    purged.push(name);
    const r = await dpkg(['--purge', name]);
    return { code: r.code, stdout: r.output, stderr: '' };
  };
  const install = async () => {
    const deb = await buildFixture(join(work, 'debs'), NAME, '1.0', join(work, 'scripts.log'));
    expect(await dpkg(['-i', deb.path])).toMatchObject({ code: 0 });
    expect(await installedVersion(NAME)).toBe('1.0');
  };
  /** The pid of a process that has exited. */
  const deadPid = () =>
    new Promise<number>((done) => {
      const child = spawn('true');
      child.once('exit', () => done(child.pid!));
    });

  beforeAll(async () => {
    await purgeFixtures(PREFIX);
    work = mkdtempSync(join(tmpdir(), 'florete-claims-'));
    claims = join(work, 'claims');
  });

  afterAll(async () => {
    await purgeFixtures(PREFIX);
    rmSync(work, { recursive: true, force: true });
  });

  beforeEach(async () => {
    purged.length = 0;
    await purgeFixtures(PREFIX);
    rmSync(claims, { recursive: true, force: true });
    mkdirSync(claims);
  });

  it('claims a package that is not installed and releases it once it is purged, not before', async () => {
    await claimPackage(NAME, purge, claims);
    expect(readFileSync(join(claims, NAME), 'utf8')).toBe(`${process.pid}\n`);
    await install();
    await releasePackage(NAME, claims);
    expect(existsSync(join(claims, NAME))).toBe(true);
    expect((await dpkg(['--purge', NAME])).code).toBe(0);
    await releasePackage(NAME, claims);
    expect(existsSync(join(claims, NAME))).toBe(false);
    expect(purged).toEqual([]);
  });

  it('purges what a stopped run left installed and takes the claim', async () => {
    await install();
    const dead = await deadPid();
    writeFileSync(join(claims, NAME), `${dead}\n`);
    await claimPackage(NAME, purge, claims);
    expect(purged).toEqual([NAME]);
    expect(await installedVersion(NAME)).toBeNull();
    expect(readFileSync(join(claims, NAME), 'utf8')).toBe(`${process.pid}\n`);
  });

  it('refuses a package installed with no claim, and one claimed by a running process, touching neither', async () => {
    await install();
    await expect(claimPackage(NAME, purge, claims)).rejects.toThrow(`${NAME} is already installed on this machine and no test installed it`);
    expect(existsSync(join(claims, NAME))).toBe(false);

    const running = spawn('sleep', ['60']);
    try {
      writeFileSync(join(claims, NAME), `${running.pid}\n`);
      await expect(claimPackage(NAME, purge, claims)).rejects.toThrow(`${NAME} is installed by a test that is still running (pid ${running.pid})`);
      expect(readFileSync(join(claims, NAME), 'utf8')).toBe(`${running.pid}\n`);
    } finally {
      running.kill();
    }
    // A claim file that names no process is no claim.
    writeFileSync(join(claims, NAME), 'garbage\n');
    await expect(claimPackage(NAME, purge, claims)).rejects.toThrow('no test installed it');
    expect(purged).toEqual([]);
    expect(await installedVersion(NAME)).toBe('1.0');
  });
});
