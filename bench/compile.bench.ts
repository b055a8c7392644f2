/**
 * Compile benchmark: `retectl compile` (the built CLI, its own process, as an operator runs it) on a
 * generated fleet (libs/rete/src/testing/fleet-rete.ts: one file per site of 1,000 servers with the site's ACL,
 * and a message of the day on every web server by tag) at each size:
 *   (a) full compile: a fresh copy of the rete, every node new, nothing kept from an earlier compile
 *   (b) recompile, nothing changed
 *   (c) recompile after one change: one web server's listen port moves, which changes its own set
 *       and the sets of its site's monitor and databases (their peer lists name it)
 *   (d) the same one change with .flor/cache removed first: every YAML file parsed and every node's
 *       compiled entry read back to compare, which is what every compile did before the cache. The baseline
 *       for (c), measured in the same run, in turns with it
 *   (e) recompile after a change that reaches a whole site: one of its databases' listen port moves,
 *       which changes the sets of every node of its site but the other database (999 of a full site),
 *       then moves back (both timed)
 *   (g) recompile after the same web server's metrics port moves, which changes its set alone: the
 *       quick path, as for (c); then moves back (both timed)
 *   (h) recompile after the same web server gains a sync block of its own (a poll interval), which
 *       changes its agent.json alone: the quick path; then loses it (both timed)
 *   (i) recompile after the same web server gains a service, which changes its flor.json alone and
 *       brings a warning (nothing reaches it): the quick path since 2026-12-08; then loses it (both timed)
 *   (j) recompile after the same web server gains a tag no file names, which changes its labels alone
 *       (no compiled file): the quick path since 2026-12-08; then loses it (both timed)
 *   (f) the file system's floor for (a): a bare loop in this process writing as many bytes as (a)
 *       left in .flor/compiled (its pack and index, measured before the clock starts) to one file, in
 *       4 MB slices, with nothing else: no YAML, no compile. The baseline for (a)
 * Each is run --repeat times, in rounds of (a) to (j) (medians); the one change moves the port back
 * and forth. For each it prints the wall time and the CPU time of the compile's process (user +
 * system), the full compile's wall
 * time per node, and the ratios one change/full compile, one change/cold caches, site/full compile,
 * a service port/full compile, a sync block/full compile, a service more/full compile, a tag/full
 * compile and full compile/floor.
 * Each run's summary line is checked: the nodes new, changed and unchanged, and files written, must
 * be what the change makes, or the benchmark exits 1.
 *
 *   npm run bench:compile [-- --sizes 10000,100000 --repeat 3]
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onCleanup, runBench } from './support/cleanup.js';
import { sizesAndRepeat } from './support/cli.js';
import { fleetFileOf, fleetNodeName, fleetRete, SITE_SIZE, writeRete } from '../libs/rete/src/testing/fleet-rete.js';
import { lastLine, timedRetectl } from './support/retectl-run.js';
import { fmt, formatTable, medianOf, wallAndCpu } from './support/table.js';

const say = (line: string): void => void process.stderr.write(`${line}\n`);

interface Run {
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly summary: string;
}

async function compile(dir: string): Promise<Run> {
  const run = await timedRetectl(['compile', '-C', dir]);
  return { wallMs: run.wallMs, cpuMs: run.cpuMs, summary: lastLine(run) };
}

/** The summary line's counts, checked against what the run must have done. */
function expectSummary(run: Run, what: string, expected: { added: number; changed: number; unchanged: number; written?: number }): void {
  const m = /: (\d+) new, (\d+) changed, (\d+) removed, (\d+) unchanged; files: (\d+) written,/.exec(run.summary);
  const got = m ? { added: Number(m[1]), changed: Number(m[2]), unchanged: Number(m[4]), written: Number(m[5]) } : undefined;
  const wrong =
    !got ||
    got.added !== expected.added ||
    got.changed !== expected.changed ||
    got.unchanged !== expected.unchanged ||
    (expected.written !== undefined && got.written !== expected.written);
  if (wrong) throw new Error(`${what}: expected ${JSON.stringify(expected)}, retectl said: ${run.summary}`);
}

/** A compiled tree's files (its packs and index) and their bytes in all. */
function bytesOf(compiled: string): { files: number; bytes: number } {
  const names = readdirSync(compiled);
  return { files: names.length, bytes: names.reduce((sum, name) => sum + statSync(join(compiled, name)).size, 0) };
}

/** (f): as many bytes written to one file by a bare loop, in 4 MB slices, timed (wall, and this process's CPU). */
function writeBytes(into: string, total: number): Run {
  const slice = Buffer.alloc(4 << 20, 0x78);
  mkdirSync(into, { recursive: true });
  const cpu = process.cpuUsage();
  const started = performance.now();
  const fd = openSync(join(into, 'pack'), 'w');
  try {
    for (let left = total; left > 0; left -= slice.length) writeSync(fd, slice, 0, Math.min(left, slice.length));
  } finally {
    closeSync(fd);
  }
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { wallMs, cpuMs: (used.user + used.system) / 1000, summary: `${total} bytes` };
}

interface SizeResult {
  readonly nodes: number;
  readonly full: Run[];
  readonly none: Run[];
  readonly one: Run[];
  readonly cold: Run[];
  /** (e); empty when the fleet is too small for a site with databases and web servers. */
  readonly site: Run[];
  /** (g), the port moved and moved back. */
  readonly service: Run[];
  /** (h), the sync block added and removed. */
  readonly sync: Run[];
  /** (i), the service added and removed. */
  readonly added: Run[];
  /** (j), the tag added and removed. */
  readonly tagged: Run[];
  readonly floor: Run[];
}

async function measure(nodes: number, repeat: number): Promise<SizeResult> {
  // A folder per round, all removed when the benchmark ends: deleting half a million files before a
  // compile would slow its file creation on a file system that discards freed blocks, and measure that.
  const base = mkdtempSync(join(tmpdir(), 'florete-bench-compile-'));
  onCleanup(async () => rmSync(base, { recursive: true, force: true }));
  // A web server in the middle site: its site's monitor and two databases list it among their peers.
  const site = Math.floor(Math.floor((nodes - 1) / SITE_SIZE) / 2);
  const moved = Math.min(nodes - 1, site * SITE_SIZE + Math.floor(SITE_SIZE / 2));
  const siteNodes = Math.min(SITE_SIZE, nodes - site * SITE_SIZE);
  const affected = moved % SITE_SIZE >= 3 && siteNodes > 3 ? 4 : 1;
  const rete = fleetRete(nodes);
  const texts = [rete.get(fleetFileOf(moved)) as string, fleetRete(nodes, moved).get(fleetFileOf(moved)) as string];
  // The site's first database (its second node), in the same file as the moved web server.
  const db = site * SITE_SIZE + 1;
  const dbText = siteNodes > 3 ? (fleetRete(nodes, db).get(fleetFileOf(db)) as string) : undefined;
  /** The moved web server's file with `removed`, found at or after `from` in its definition, replaced by `inserted`. */
  const movedDef = texts[0].indexOf(`- name: ${fleetNodeName(moved)}\n`);
  const edited = (from: string, removed: string, inserted: string): string => {
    const at = texts[0].indexOf(from, movedDef);
    return `${texts[0].slice(0, at)}${inserted}${texts[0].slice(at + removed.length)}`;
  };
  // Its metrics port, 9100 in the fleet, moved to 9101.
  const serviceText = edited('port: 9100', 'port: 9100', 'port: 9101');
  // Its own poll interval, in a block of its own before its services.
  const syncText = edited('    services:', '', '    sync: { poll_interval: 1m }\n');
  // And a service more beside it: its flor.json lists it, and nothing reaches it (a warning in the file).
  const addedText = edited('port: 9100', 'port: 9100', 'port: 9100 }\n      - { name: dns, port: 53');
  // And a tag no file names (an owner's mark): its labels change, no compiled file does.
  const taggedText = edited('    tags: [', '    tags: [', '    tags: [owner-ops, ');

  const full: Run[] = [];
  const none: Run[] = [];
  const one: Run[] = [];
  const cold: Run[] = [];
  const siteRuns: Run[] = [];
  const serviceRuns: Run[] = [];
  const syncRuns: Run[] = [];
  const addedRuns: Run[] = [];
  const taggedRuns: Run[] = [];
  const floor: Run[] = [];
  for (let r = 0; r < repeat; r++) {
    say(
      `${fmt(nodes)} nodes: round ${r + 1} of ${repeat}: full compile, no change, one change, one change with cold caches, a site, a service port, a sync block, a service more, a tag, the file system's floor …`,
    );
    const dir = join(base, `round-${r + 1}`);
    writeRete(dir, rete);
    // The moved port, then back.
    const put = (text: 0 | 1) => writeFileSync(join(dir, fleetFileOf(moved)), texts[text]);
    const f = await compile(dir);
    expectSummary(f, 'full compile', { added: nodes, changed: 0, unchanged: 0 });
    full.push(f);
    const compiled = join(dir, '.flor', 'compiled');
    const lines = readFileSync(join(compiled, 'index'), 'utf8').split('\n').length - 2;
    if (lines !== nodes) throw new Error(`full compile: ${nodes} nodes expected in .flor/compiled/index, found ${lines}`);
    const written = bytesOf(compiled);
    if (written.files !== 2) throw new Error(`full compile: one pack and its index expected in .flor/compiled, found ${written.files} files`);
    floor.push(writeBytes(join(base, `floor-${r + 1}`), written.bytes));
    const n = await compile(dir);
    expectSummary(n, 'no change', { added: 0, changed: 0, unchanged: nodes, written: 0 });
    none.push(n);
    put(1);
    const o = await compile(dir);
    expectSummary(o, 'one change', { added: 0, changed: affected, unchanged: nodes - affected, written: 2 * affected });
    one.push(o);
    put(0);
    rmSync(join(dir, '.flor', 'cache'), { recursive: true, force: true });
    const c = await compile(dir);
    expectSummary(c, 'one change, cold caches', { added: 0, changed: affected, unchanged: nodes - affected, written: 2 * affected });
    cold.push(c);
    /** An edit of the moved node's file and the edit undone, both compiled and checked. */
    const thereAndBack = async (file: string, text: string, what: string, counts: Parameters<typeof expectSummary>[2]): Promise<Run[]> => {
      writeFileSync(join(dir, file), text);
      const there = await compile(dir);
      expectSummary(there, what, counts);
      put(0);
      const back = await compile(dir);
      expectSummary(back, `${what}, undone`, counts);
      return [there, back];
    };
    if (dbText !== undefined) {
      const reached = { added: 0, changed: siteNodes - 1, unchanged: nodes - siteNodes + 1, written: 2 * (siteNodes - 1) };
      siteRuns.push(...(await thereAndBack(fleetFileOf(db), dbText, 'a database moved', reached)));
    }
    const moves = { added: 0, changed: 1, unchanged: nodes - 1, written: 2 };
    serviceRuns.push(...(await thereAndBack(fleetFileOf(moved), serviceText, 'a service port moved', moves)));
    syncRuns.push(...(await thereAndBack(fleetFileOf(moved), syncText, 'a sync block added', moves)));
    addedRuns.push(...(await thereAndBack(fleetFileOf(moved), addedText, 'a service added', moves)));
    taggedRuns.push(...(await thereAndBack(fleetFileOf(moved), taggedText, 'a tag added', { added: 0, changed: 0, unchanged: nodes, written: 0 })));
  }
  return { nodes, full, none, one, cold, site: siteRuns, service: serviceRuns, sync: syncRuns, added: addedRuns, tagged: taggedRuns, floor };
}

function report(results: readonly SizeResult[]): void {
  const us = (wall: number, nodes: number) => `${fmt((wall * 1000) / nodes, 1)} µs`;
  const rows = results.map(({ nodes, full, none, one, cold, site, service, sync, added, tagged, floor }) => {
    const [f, o, c, p] = [medianOf(full, 'wallMs'), medianOf(one, 'wallMs'), medianOf(cold, 'wallMs'), medianOf(service, 'wallMs')];
    const [y, a, t] = [medianOf(sync, 'wallMs'), medianOf(added, 'wallMs'), medianOf(tagged, 'wallMs')];
    const s = site.length > 0 ? medianOf(site, 'wallMs') : undefined;
    return [
      fmt(nodes),
      wallAndCpu(full),
      us(f, nodes),
      wallAndCpu(none),
      wallAndCpu(one),
      wallAndCpu(cold),
      fmt(o / f, 3),
      fmt(o / c, 3),
      s === undefined ? '—' : wallAndCpu(site),
      s === undefined ? '—' : fmt(s / f, 3),
      wallAndCpu(service),
      fmt(p / f, 3),
      wallAndCpu(sync),
      fmt(y / f, 3),
      wallAndCpu(added),
      fmt(a / f, 3),
      wallAndCpu(tagged),
      fmt(t / f, 3),
      wallAndCpu(floor),
      fmt(f / medianOf(floor, 'wallMs'), 2),
    ];
  });
  process.stdout.write(
    `${formatTable(['nodes', 'full compile', 'per node', 'no change', 'one change', 'one change, cold caches', 'one/full', 'one/cold', 'a site', 'site/full', 'a service port', 'port/full', 'a sync block', 'sync/full', 'a service more', 'more/full', 'a tag', 'tag/full', 'fs floor', 'full/floor'], rows)}\n` +
      `wall time (CPU time of the compile process, user + system), medians of ${results[0]?.full.length ?? 0} rounds (a site, a service port, a sync block, a service more, a tag: of their two runs a round); per node: full compile wall time / nodes;\n` +
      `fs floor: as many bytes as the full compile's pack and index, written to one file in 4 MB slices by a bare loop (wall, CPU of that loop)\n`,
  );
}

async function main(): Promise<void> {
  const { sizes, repeat } = sizesAndRepeat('10000,100000');
  const results: SizeResult[] = [];
  for (const nodes of sizes) results.push(await measure(nodes, repeat));
  report(results);
}

runBench('bench:compile', main);
