/**
 * retectl publish benchmark: `retectl publish` of one changed web server in a generated fleet
 * (libs/rete/src/testing/fleet-rete.ts), the whole command as an operator runs it (the built CLI in its own process),
 * against the built coordinator on a throwaway PostgreSQL (mirror off), in two ways, in turns:
 *   (a) with the compile record: the YAML is what the last compile read, so publish takes the tree
 *       from .flor/cache/compiled.v8 and reads back from .flor/compiled only the nodes it sends
 *   (b) the same publish with the compile record moved aside for it (renamed before, back after):
 *       publish validates and compiles the rete again (with the parse cache), reads the whole compiled
 *       tree back, compares it and works out every node's set digest and bucket itself, which is what
 *       every publish did before the record stood for the tree. The baseline for (a), in the same run
 * Per size the rete is compiled (not timed) and published whole once: that first publish, which sends
 * every node with its labels, is timed and printed on its own (one run, no baseline). Each round then moves one web
 * server's listen port, which changes its own set and the sets of its site's monitor and databases
 * (their peer lists name it), recompiles (not timed) and publishes that; then moves it back,
 * recompiles and publishes again. One of the two publishes is (a), the other (b), and which goes
 * first alternates from round to round. Each publish's summary line is checked: the changed nodes
 * and the nodes sent must be the four the move changes, or the benchmark exits 1.
 * It prints the wall time of each and the CPU time of the publish's process (user + system), medians
 * of --repeat rounds, and the ratio (a)/(b) of the wall times. Every publish runs with --verbose, and a
 * second table takes (a) apart from its lines: the time from the process's start to its first request
 * (node's start, retectl's modules, reading the rete), reading the rete alone, the requests together
 * (the figure the issue's 150 ms target is about, with the reading before them) and each kind of
 * request, medians of the rounds.
 *
 *   npm run bench:retectl-publish [-- --sizes 10000,100000 --repeat 3]
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onCleanup, runBench } from './support/cleanup.js';
import { sizesAndRepeat } from './support/cli.js';
import { startCoordinator } from './support/coordinator.js';
import { fleetFileOf, fleetRete, SITE_SIZE, writeRete } from '../libs/rete/src/testing/fleet-rete.js';
import { startThrowawayPostgres } from './support/postgres.js';
import { lastLine, timedRetectl, type RetectlRun } from './support/retectl-run.js';
import { fmt, formatTable, median, medianOf, ms, wallAndCpu } from './support/table.js';

const RECORD = join('.flor', 'cache', 'compiled.v8');
/** The first whole-tree publish of the largest fleet is tens of MB: well past the default 16 MiB. */
const BODY_LIMIT = 128 * 1024 * 1024;
const say = (line: string): void => void process.stderr.write(`${line}\n`);

type Run = RetectlRun;

/**
 * The built retectl in its own process. Its environment names no coordinator, token or config file
 * of the machine's: the command line names the coordinator and the token.
 */
function retectl(args: readonly string[], configHome: string): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: configHome };
  for (const name of ['FLORETE_COORDINATOR', 'FLORETE_TOKEN', 'NODE_OPTIONS']) delete env[name];
  return timedRetectl(args, env);
}

/** The compile's summary line must count the nodes the move changed. */
function expectCompiled(run: Run, changed: number): void {
  const summary = lastLine(run);
  const m = /: (\d+) new, (\d+) changed, (\d+) removed,/.exec(summary);
  if (!m || Number(m[1]) !== 0 || Number(m[2]) !== changed || Number(m[3]) !== 0) {
    throw new Error(`recompile after one move: expected ${changed} changed, retectl said: ${summary}`);
  }
}

/** The publish's summary line (its first) must count `changed` nodes changed, the rest unchanged, and `changed` nodes sent. */
function expectPublished(run: Run, what: string, nodes: number, changed: number): void {
  const summary = run.head.split('\n').find((line) => line.startsWith('published ')) ?? run.head.split('\n')[0];
  const sent = `(${changed} node${changed === 1 ? '' : 's'} sent, `;
  if (!summary.includes(`: ${changed} changed, ${nodes - changed} unchanged ${sent}`)) {
    throw new Error(`${what}: expected ${changed} changed, ${nodes - changed} unchanged ${sent}…, retectl said: ${summary}`);
  }
}

interface SizeResult {
  readonly nodes: number;
  /** The first publish, the whole tree. */
  readonly first: Run;
  readonly recorded: Run[];
  readonly aside: Run[];
}

async function measure(nodes: number, repeat: number): Promise<SizeResult> {
  const base = mkdtempSync(join(tmpdir(), 'florete-bench-retectl-publish-'));
  onCleanup(async () => rmSync(base, { recursive: true, force: true }));
  const dir = join(base, 'rete');
  // A web server in the middle site: its site's monitor and two databases list it among their peers.
  const site = Math.floor(Math.floor((nodes - 1) / SITE_SIZE) / 2);
  const moved = Math.min(nodes - 1, site * SITE_SIZE + Math.floor(SITE_SIZE / 2));
  const siteNodes = Math.min(SITE_SIZE, nodes - site * SITE_SIZE);
  const affected = moved % SITE_SIZE >= 3 && siteNodes > 3 ? 4 : 1;
  const rete = fleetRete(nodes);
  const texts = [rete.get(fleetFileOf(moved)) as string, fleetRete(nodes, moved).get(fleetFileOf(moved)) as string];
  writeRete(dir, rete);

  say(`${fmt(nodes)} nodes: compiling the rete${nodes >= 50_000 ? ' (about a minute at 100,000 nodes)' : ''} …`);
  await retectl(['compile', '-C', dir], base);
  say(`${fmt(nodes)} nodes: PostgreSQL and the coordinator …`);
  const pg = await startThrowawayPostgres();
  const coordinator = await startCoordinator({ databaseUrl: pg.url, env: { FLORETE_MIRROR: 'off', FLORETE_BODY_LIMIT: String(BODY_LIMIT) } });
  const publish = (message: string) =>
    retectl(['publish', '-v', '-C', dir, '--coordinator', coordinator.url, '--token', coordinator.adminToken, '-m', message], base);
  say(`${fmt(nodes)} nodes: publishing the whole tree …`);
  const first = await publish(`bench: ${nodes} nodes, the whole tree`);
  expectPublished(first, 'first publish', nodes, nodes);

  const recorded: Run[] = [];
  const aside: Run[] = [];
  let port: 0 | 1 = 0;
  for (let r = 0; r < repeat; r++) {
    const order = r % 2 === 0 ? (['recorded', 'aside'] as const) : (['aside', 'recorded'] as const);
    say(
      `${fmt(nodes)} nodes: round ${r + 1} of ${repeat}: one change published ${order.map((o) => (o === 'recorded' ? 'with the compile record' : 'with it moved aside')).join(', then ')} …`,
    );
    for (const way of order) {
      // The moved port, then back.
      port = port === 0 ? 1 : 0;
      writeFileSync(join(dir, fleetFileOf(moved)), texts[port]);
      expectCompiled(await retectl(['compile', '-C', dir], base), affected);
      const message = `bench: round ${r + 1}, port ${port === 1 ? 'moved' : 'back'}, ${way === 'recorded' ? 'with the compile record' : 'the record moved aside'}`;
      let run: Run;
      if (way === 'recorded') run = await publish(message);
      else {
        const record = join(dir, RECORD);
        const away = `${record}.aside`;
        renameSync(record, away);
        try {
          run = await publish(message);
        } finally {
          renameSync(away, record);
        }
      }
      expectPublished(run, message, nodes, affected);
      (way === 'recorded' ? recorded : aside).push(run);
    }
  }
  await coordinator.stop();
  pg.stop();
  return { nodes, first, recorded, aside };
}

/** What one publish's --verbose lines say about where its time went. */
interface Breakdown {
  /** From the process's start to the first request's start: node, retectl's modules, reading the rete. */
  readonly untilRequests: number;
  /** Reading the rete and its compiled tree (loadPublishable). */
  readonly reading: number;
  /** Every request, each from its first byte written to its answer's last byte read. */
  readonly requests: number;
  /** Per kind of request (method and path without the query), summed over the publish's requests of that kind. */
  readonly byRequest: ReadonlyMap<string, number>;
}

/** The kinds of request a publish sends, in its order, with their column names. */
const REQUEST_KINDS = [
  ['GET /v1/heads/buckets', 'buckets'],
  ['GET /v1/heads', 'heads'],
  ['POST /v1/blobs/missing', 'missing'],
  ['POST /v1/blobs', 'blobs'],
  ['POST /v1/publishes', 'publish'],
] as const;

/** A publish's --verbose lines (`retectl: +<ms since start> ms …`), taken apart; a publish that printed none exits 1. */
function breakdownOf(run: Run): Breakdown {
  let reading: number | undefined;
  let firstStart: number | undefined;
  let requests = 0;
  const byRequest = new Map<string, number>();
  for (const line of run.errHead.split('\n')) {
    const stamped = /^retectl: \+(\d+) ms (.*)$/.exec(line);
    if (!stamped) continue;
    const [, at, text] = stamped;
    const read = /^read the rete .* in ([\d.]+) ms: /.exec(text);
    if (read) reading = Number(read[1]);
    const request = /^(GET|POST|PUT) (?:https?:\/\/[^/]+)([^?\s]*)\S* \d+ in ([\d.]+) ms /.exec(text);
    if (!request) continue;
    const took = Number(request[3]);
    // The line is printed when the answer is read: the request began `took` before it.
    firstStart ??= Number(at) - took;
    requests += took;
    const kind = `${request[1]} ${request[2]}`;
    byRequest.set(kind, (byRequest.get(kind) ?? 0) + took);
  }
  if (reading === undefined || firstStart === undefined) throw new Error(`retectl publish -v printed no reading or no request: ${run.errHead.slice(0, 2000)}`);
  return { untilRequests: firstStart, reading, requests, byRequest };
}

function report(results: readonly SizeResult[]): void {
  const rows = results.map(({ nodes, first, recorded, aside }) => [
    fmt(nodes),
    wallAndCpu(recorded),
    wallAndCpu(aside),
    fmt(medianOf(recorded, 'wallMs') / medianOf(aside, 'wallMs'), 3),
    wallAndCpu([first]),
  ]);
  process.stdout.write(
    `${formatTable(['nodes', '(a) with the compile record', '(b) record moved aside', 'a/b', 'first publish, whole tree'], rows)}\n` +
      `one change as retectl publish sends it: wall time (CPU time of the retectl process, user + system), medians of ${results[0]?.recorded.length ?? 0} rounds; the first publish: one run\n`,
  );
  const parts = results.map(({ nodes, recorded }) => {
    const each = recorded.map(breakdownOf);
    const of = (pick: (b: Breakdown) => number) => ms(median(each.map(pick)));
    return [
      fmt(nodes),
      of((b) => b.untilRequests),
      of((b) => b.reading),
      of((b) => b.requests),
      of((b) => b.reading + b.requests),
      // Of the rounds that made it: a blob is uploaded only the first time its port is published.
      ...REQUEST_KINDS.map(([kind]) => {
        const made = each.flatMap((b) => (b.byRequest.has(kind) ? [b.byRequest.get(kind)!] : []));
        return made.length === 0 ? '-' : `${ms(median(made))}${made.length < each.length ? ` (${made.length})` : ''}`;
      }),
    ];
  });
  process.stdout.write(
    `\n${formatTable(['nodes', 'start → first request', 'reading the rete', 'requests', 'reading + requests', ...REQUEST_KINDS.map(([, name]) => name)], parts)}\n` +
      `(a) taken apart from its --verbose lines, medians of the rounds (of the rounds that made a kind of request, their number in brackets when not all); "reading + requests" is the figure the 150 ms target is about\n`,
  );
}

async function main(): Promise<void> {
  const { sizes, repeat } = sizesAndRepeat('10000,100000');
  const results: SizeResult[] = [];
  for (const nodes of sizes) results.push(await measure(nodes, repeat));
  report(results);
}

runBench('bench:retectl-publish', main);
