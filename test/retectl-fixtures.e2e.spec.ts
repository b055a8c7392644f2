import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { STACK_TRACE } from './support/http.js';

/**
 * The broken-rete corpus: every folder under test/fixtures/rete holds one defect (a few hold many) and
 * an expected.json listing exactly the errors `retectl validate` must report, as `file:line:col code`.
 * Each runs through the built CLI as a real process: exit 1, one located line per error, no stack trace.
 */
const CLI = resolve('dist/apps/retectl/src/main.js');
const CORPUS = resolve('test/fixtures/rete');
const fixtures = readdirSync(CORPUS, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}
const retectl = (args: string[]): Promise<Run> =>
  new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent' } }, (error, stdout, stderr) => {
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });

/** Runs every fixture twice (human and --json), four processes at a time. */
async function runAll(): Promise<Map<string, { human: Run; json: Run }>> {
  const results = new Map<string, { human: Run; json: Run }>();
  const queue = [...fixtures];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let name = queue.shift(); name; name = queue.shift()) {
        const dir = join(CORPUS, name);
        results.set(name, { human: await retectl(['validate', '-C', dir]), json: await retectl(['validate', '--json', '-C', dir]) });
      }
    }),
  );
  return results;
}

describe('retectl validate on the broken-rete corpus', () => {
  let results: Map<string, { human: Run; json: Run }>;
  beforeAll(async () => {
    results = await runAll();
  }, 600_000); // 120 CLI processes; generous for a loaded two-core machine

  it('holds at least 40 broken retes, a few of them with many defects', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(40);
    const many = fixtures.filter((f) => JSON.parse(readFileSync(join(CORPUS, f, 'expected.json'), 'utf8')).errors.length >= 3);
    expect(many.length).toBeGreaterThanOrEqual(3);
  });

  it.each(fixtures)('%s: reports exactly the expected codes at the expected file:line:col', (name) => {
    const expected: string[] = JSON.parse(readFileSync(join(CORPUS, name, 'expected.json'), 'utf8')).errors;
    expect(expected.length).toBeGreaterThan(0);
    const { human, json } = results.get(name)!;

    // Machine output: the same errors, in order, with the codes the fixture names.
    expect(json.code).toBe(1);
    const verdict = JSON.parse(json.stdout);
    expect(verdict.ok).toBe(false);
    expect(verdict.errors.map((d: { file: string; line: number; col: number; code: string }) => `${d.file}:${d.line}:${d.col} ${d.code}`)).toEqual(expected);

    // Human output: one `file:line:col: path: message [code]` line per error, then one summary line.
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    const lines = human.stderr.trimEnd().split('\n');
    const errorLines = lines.filter((l) => !l.includes(': warning: ') && !l.startsWith('retectl: '));
    expect(
      errorLines.map((l) => {
        const m = /^(.+?:\d+:\d+): (?:[^\s]+: )?.+ \[([a-z_]+)\]$/.exec(l);
        return m ? `${m[1]} ${m[2]}` : `unparsable: ${l}`;
      }),
    ).toEqual(expected);
    expect(lines[lines.length - 1]).toMatch(/^retectl: the rete does not validate: \d+ errors?, \d+ warnings?$/);
    expect(human.stderr).not.toMatch(STACK_TRACE);
    expect(json.stderr).not.toMatch(STACK_TRACE);
  });

  it('compile refuses a broken rete and writes nothing', async () => {
    const dir = join(CORPUS, 'many-reference-errors');
    const run = await retectl(['compile', '-C', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^policy\.yaml:5:12: acl\[0\]\.from\[0\]: no group is named "nobody" \[unknown_group\]$/m);
    expect(existsSync(join(dir, '.flor'))).toBe(false);
  });
});
