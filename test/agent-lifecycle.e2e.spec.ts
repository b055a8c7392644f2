import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import type { AgentStatus } from '#contracts';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
  type AgentProcess,
} from './fixtures/agent/harness.js';
import { freePort } from './support/free-port.js';

jest.setTimeout(180_000);

/** A port free now: bound, then released, so the coordinator can come back on the address the agent enrolled with. */
/**
 * The agent's lifecycle words with real processes: the built coordinator, stopped and started again
 * on the same data dir and port, and `flor agent run` / `status` / `sync`. alpha polls hourly, so
 * only `flor agent sync` (and the pass at agent start) moves it.
 */
describe('flor agent status: enrolled, disconnected while the coordinator is gone, enrolled again', () => {
  let dataDir: string;
  let port: number;
  let coordinator: CoordinatorProcess;
  let files: AgentFiles;
  let agent: AgentProcess;

  const start = () => startCoordinatorProcess({ dataDir, env: { PORT: String(port) } });
  const status = async (): Promise<AgentStatus> => {
    const r = await flor(['agent', 'status', '--json', ...files.args]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(r.stdout) as AgentStatus;
  };
  const text = async () => (await flor(['agent', 'status', ...files.args])).stdout;
  const sync = () => flor(['agent', 'sync', ...files.args]);

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'florete-coord-'));
    port = await freePort();
    coordinator = await start();
    const fleet = new Fleet(new Client(coordinator.url, coordinator.adminToken));
    await fleet.publish({ alpha: { 'agent.json': agentJson('alpha', 3600), 'flor.json': florJson('alpha', 'one') } });
    files = agentFiles('none', { request_timeout_seconds: 2 });
    expect((await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken('alpha'), ...files.args])).code).toBe(0);
    agent = await startAgent(files);
    await waitFor('alpha at 1', async () => (await status()).applied_version === 1);
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (files) removeTree(files.root);
  });

  let contact: string;
  let firstFailure: string;

  it('is enrolled since its enrolment while its passes reach the coordinator', async () => {
    const enrolledAt = JSON.parse(readFileSync(join(files.stateDir, 'identity.json'), 'utf8')).enrolled_at as string;
    const s = await status();
    expect(s).toMatchObject({ lifecycle: 'enrolled', since: enrolledAt, last_contact: expect.any(String), last_result: 'applied' });
    contact = s.last_contact!;
    expect(await text()).toMatch(new RegExp(`^lifecycle\\s+enrolled since ${enrolledAt}$`, 'm'));
  });

  it('is disconnected from the first pass that cannot reach the stopped coordinator, keeping the last contact', async () => {
    await coordinator.stop();
    const failed = await sync();
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/^error: cannot reach http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    const s = await status();
    expect(s).toMatchObject({ lifecycle: 'disconnected', last_contact: contact, last_result: 'error' });
    firstFailure = s.since!;
    expect(firstFailure).toBe(s.last_poll);
    expect(Date.parse(firstFailure)).toBeGreaterThan(Date.parse(contact));
    const human = await text();
    expect(human).toMatch(new RegExp(`^lifecycle\\s+disconnected since ${firstFailure}$`, 'm'));
    expect(human).toMatch(new RegExp(`^last contact\\s+${contact}$`, 'm'));

    // The run of failures goes on: since stays at its first pass.
    expect((await sync()).code).toBe(1);
    const again = await status();
    expect(again).toMatchObject({ lifecycle: 'disconnected', since: firstFailure, last_contact: contact });
    expect(Date.parse(again.last_poll!)).toBeGreaterThan(Date.parse(firstFailure));
  });

  it('keeps it in its state dir across a restart of the agent', async () => {
    expect(await agent.stop()).toBe(0);
    const stopped = JSON.parse(readFileSync(join(files.stateDir, 'state.json'), 'utf8'));
    expect(stopped).toMatchObject({ disconnected_since: firstFailure, last_contact: contact });
    agent = await startAgent(files);
    // The pass at start fails too, and is part of the same run.
    await waitFor('the pass at start', async () => (await status()).last_poll !== stopped.last_poll);
    expect(await status()).toMatchObject({ lifecycle: 'disconnected', since: firstFailure, last_contact: contact });
  });

  it('is enrolled again after the first pass that reaches the coordinator once it is back', async () => {
    coordinator = await start();
    expect(await sync()).toMatchObject({ code: 0, stdout: 'up to date at 1\n' });
    const s = await status();
    expect(s).toMatchObject({ lifecycle: 'enrolled', last_result: 'up_to_date', last_error: null });
    expect(s.since).toBe(s.last_contact);
    expect(s.since).toBe(s.last_poll);
    expect(Date.parse(s.since!)).toBeGreaterThan(Date.parse(firstFailure));
    expect(await text()).toMatch(new RegExp(`^lifecycle\\s+enrolled since ${s.since}$`, 'm'));
    expect(JSON.parse(readFileSync(join(files.stateDir, 'state.json'), 'utf8'))).toMatchObject({ disconnected_since: null, reconnected_at: s.since });
  });
});
