import { jest } from '@jest/globals';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { Client } from './support/http.js';
import {
  agentFiles,
  agentJson,
  Fleet,
  flor,
  florJson,
  removeTree,
  sleep,
  startAgent,
  stopAllAgents,
  waitFor,
  type AgentFiles,
} from './fixtures/agent/harness.js';

jest.setTimeout(120_000);

const NODE = 'idler';

/**
 * What an idle fleet costs, seen from outside with a real agent: it polls on its interval, each poll
 * is its contact, and it sends no report until something happens. Counted by the coordinator's own
 * metrics, so a report the agent sent and the coordinator took would show.
 */
describe('a real agent with nothing to do', () => {
  let coordinator: CoordinatorProcess;
  let admin: Client;
  let fleet: Fleet;
  let files: AgentFiles;

  const counters = async () => {
    const text = (await admin.get('/metrics')).text;
    const read = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    return { polls: read('florete_bundle_polls_total'), notModified: read('florete_bundle_polls_not_modified_total'), reports: read('florete_reports_total') };
  };
  const lastContact = async () => (await admin.get(`/v1/nodes/${NODE}`)).body.last_contact as string | null;
  const tree = (marker: string) => ({ [NODE]: { 'agent.json': agentJson(NODE, 1), 'flor.json': florJson(NODE, marker) } });

  beforeAll(async () => {
    // Contact is flushed every 200 ms, so the test need not wait the default 5 s to see it move.
    coordinator = await startCoordinatorProcess({ env: { FLORETE_CONTACT_FLUSH_MS: '200', FLORETE_MIRROR: 'off' } });
    admin = new Client(coordinator.url, coordinator.adminToken);
    fleet = new Fleet(admin);
    files = agentFiles('supervise');
    const enrolled = await flor(['agent', 'enroll', '--coordinator', coordinator.url, '--token', await fleet.enrolmentToken(NODE), ...files.args]);
    if (enrolled.code !== 0) throw new Error(`enrol: ${enrolled.stdout}${enrolled.stderr}`);
    await fleet.publish(tree('one'), 'first');
    await startAgent(files);
    await waitFor('version 1 applied', async () => (await fleet.nodeStatus(NODE))?.applied_version === 1, 60_000);
  });

  afterAll(async () => {
    await stopAllAgents();
    await coordinator?.stop();
    if (files) removeTree(files.root);
  });

  it('polls every second and reports nothing while nothing happens, and its last contact still moves', async () => {
    // Whatever the agent had to say about applying version 1 has been said once it is settled.
    await sleep(2_000);
    const before = await counters();
    const contactBefore = await lastContact();
    expect(contactBefore).not.toBeNull();
    await sleep(6_000);
    const after = await counters();
    // About six passes at one a second; a loaded machine may fit fewer, never none.
    expect(after.polls - before.polls).toBeGreaterThanOrEqual(3);
    expect(after.notModified - before.notModified).toBe(after.polls - before.polls);
    expect(after.reports - before.reports).toBe(0);
    const contactAfter = await lastContact();
    expect(Date.parse(contactAfter!)).toBeGreaterThan(Date.parse(contactBefore!));
  });

  it('reports again as soon as something happens: a new version', async () => {
    const before = await counters();
    await fleet.publish(tree('two'), 'second');
    await waitFor('version 2 applied', async () => (await fleet.nodeStatus(NODE))?.applied_version === 2, 60_000);
    expect((await counters()).reports - before.reports).toBeGreaterThanOrEqual(1);
  });
});
