import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { agentFiles, removeTree, startAgent, waitFor, type AgentFiles, type AgentProcess } from './fixtures/agent/harness.js';

jest.setTimeout(120_000);

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Line = Record<string, unknown>;
const jsonLines = (output: readonly string[]): Line[] =>
  output
    .join('\n')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

/** A process stop that cannot hang the suite: SIGKILL after the bound. */
async function bounded(
  stop: () => Promise<unknown>,
  child: { exitCode: number | null; signalCode: NodeJS.Signals | null; kill(s: NodeJS.Signals): boolean },
  ms: number,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return void (await stop());
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), ms)));
  if ((await Promise.race([stop(), late])) === 'late') {
    child.kill('SIGKILL');
    await stop();
  }
  clearTimeout(timer);
}

/**
 * The coordinator and the agent, run as real processes, write one log shape: a JSON object per line
 * with `time` an RFC 3339 string, `level` a level's name and `msg` the message; so one query (jq,
 * a log pipeline's parser) reads both. The coordinator's request lines carry the request's id,
 * which its answer carries in X-Request-Id.
 */
describe('one log shape for the coordinator and the agent', () => {
  let coordinator: CoordinatorProcess;
  let files: AgentFiles;
  let agent: AgentProcess;

  beforeAll(async () => {
    coordinator = await startCoordinatorProcess();
    files = agentFiles('none');
    agent = await startAgent(files);
  });

  afterAll(async () => {
    if (agent) await bounded(() => agent.stop(), agent.child, 20_000);
    if (coordinator) await bounded(() => coordinator.stop(), coordinator.child, 30_000);
    if (files) removeTree(files.root);
  });

  const expectShape = (line: Line) => {
    expect(line).toEqual(expect.objectContaining({ time: expect.stringMatching(RFC3339), level: expect.any(String), msg: expect.any(String) }));
    expect(LEVELS).toContain(line.level);
    // The time is now-ish, not a misread number: within the test's run.
    expect(Math.abs(Date.parse(line.time as string) - Date.now())).toBeLessThan(10 * 60_000);
  };

  it('every JSON line of both has time (RFC 3339), level (a name) and msg', async () => {
    const coordinatorLines = jsonLines(coordinator.output);
    expect(coordinatorLines.map((l) => l.msg)).toContain('coordinator listening');
    coordinatorLines.forEach(expectShape);
    const agentLines = await waitFor('the agent started line', async () => {
      const lines = jsonLines(agent.output);
      return lines.some((l) => l.msg === 'agent started') && lines;
    });
    agentLines.forEach(expectShape);
    expect(coordinatorLines.find((l) => l.msg === 'coordinator listening')).toMatchObject({ level: 'info', service: 'coordinator' });
    expect(agentLines.find((l) => l.msg === 'agent started')).toMatchObject({ level: 'info' });
  });

  it('a request line carries the request id the answer names: an acceptable X-Request-Id as given, else a new one', async () => {
    const send = async (path: string, id?: string) => {
      const r = await fetch(new URL(path, coordinator.url), { headers: id === undefined ? {} : { 'x-request-id': id } });
      await r.arrayBuffer();
      return { status: r.status, id: r.headers.get('x-request-id') };
    };
    const given = await send('/healthz', 'edge-7f3a.1:42');
    expect(given).toEqual({ status: 200, id: 'edge-7f3a.1:42' });
    const none = await send('/healthz');
    const spaced = await send('/healthz', 'two words');
    const long = await send('/healthz', 'a'.repeat(129));
    const missing = await send('/v1/no-such-route', 'missing-route-1');
    expect(missing).toEqual({ status: 404, id: 'missing-route-1' });
    for (const generated of [none, spaced, long]) expect(generated).toEqual({ status: 200, id: expect.stringMatching(UUID) });
    expect(new Set([none.id, spaced.id, long.id]).size).toBe(3);

    const requestLines = () => jsonLines(coordinator.output).filter((l) => l.msg === 'request');
    const ids = [given.id, none.id, spaced.id, long.id, missing.id];
    await waitFor('the request lines', async () => ids.every((id) => requestLines().some((l) => l.req_id === id)));
    const line = requestLines().find((l) => l.req_id === given.id)!;
    expectShape(line);
    expect(line).toMatchObject({ level: 'info', method: 'GET', path: '/healthz', status: 200 });
    expect(requestLines().find((l) => l.req_id === missing.id)).toMatchObject({ path: '/v1/no-such-route', status: 404 });
  });
});
