import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { startCoordinatorProcess, type CoordinatorProcess } from './support/coordinator-process.js';
import { createPostgresDatabase, hasPostgres } from './support/databases.js';
import { Client } from './support/http.js';

/**
 * The shipped Prometheus files, checked by Debian's promtool (the scrape config, the rules, and the
 * rules' own unit tests), and the metric names the alert rules and the Grafana dashboard query
 * checked against what a real coordinator exports.
 */

const PROMETHEUS = resolve('deploy/prometheus');
const DASHBOARD = resolve('deploy/grafana/florete-coordinator.json');
const PROMTOOL = spawnSync('promtool', ['--version']).status === 0 ? 'promtool' : undefined;

function promtool(args: string[], cwd: string): { code: number | null; output: string } {
  if (!PROMTOOL) throw new Error('promtool is not installed (Debian package prometheus; .ci/run installs it)');
  const r = spawnSync(PROMTOOL, args, { cwd, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

const RulesFile = z.object({
  groups: z.array(z.object({ name: z.string(), rules: z.array(z.object({ alert: z.string().optional(), record: z.string().optional(), expr: z.string() })) })),
});
const Dashboard = z.object({ panels: z.array(z.object({ title: z.string(), targets: z.array(z.object({ expr: z.string() })) })) });

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: identifiers that are not a function or aggregation
 * (followed by a parenthesis), a keyword, or inside a label matcher, a range, a string or a
 * grouping clause's label list.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2] || KEYWORDS.has(m[1].toLowerCase())) continue;
    names.add(m[1]);
  }
  return [...names];
}

/** Every sample name the exposition offers: its samples, and each declared family (a histogram's with its suffixes). */
function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      names.add(type[1]);
      if (type[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(type[1] + s);
    } else if (line && !line.startsWith('#')) names.add(/^[^\s{]+/.exec(line)![0]);
  }
  return names;
}

describe('the PromQL name extraction', () => {
  it('finds the metrics and nothing else', () => {
    expect(
      metricNames('histogram_quantile(0.99, sum by (instance, le) (rate(a_bucket{job="x", le!~"y"}[5m]))) > 1 and on (instance) b{database="postgres"}').sort(),
    ).toEqual(['a_bucket', 'b']);
    expect(metricNames('max without (instance) (sum without (age) (c{age=~"1d|older"}) / sum(d)) > 0.1 or up == 0').sort()).toEqual(['c', 'd', 'up']);
  });
});

describe('deploy/prometheus', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'florete-prometheus-'));
    cpSync(PROMETHEUS, dir, { recursive: true });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has a scrape config promtool accepts, with its rule files, once the token file it names exists', () => {
    const token = join(dir, 'reader-token');
    writeFileSync(token, 'rt_example\n');
    const config = readFileSync(join(dir, 'prometheus.yml'), 'utf8');
    expect(config).toContain('credentials_file: /etc/prometheus/florete-reader-token');
    writeFileSync(join(dir, 'prometheus.yml'), config.replace('/etc/prometheus/florete-reader-token', token));
    const r = promtool(['check', 'config', 'prometheus.yml'], dir);
    expect(r).toEqual({ code: 0, output: expect.stringContaining('SUCCESS') });
    expect(r.output).toMatch(/florete-alerts\.yml\s+SUCCESS: 8 rules found/);
  });

  it('has alert rules promtool checks, and their unit tests pass', () => {
    expect(promtool(['check', 'rules', 'florete-alerts.yml'], dir)).toEqual({ code: 0, output: expect.stringContaining('SUCCESS: 8 rules found') });
    expect(promtool(['test', 'rules', 'florete-alerts.test.yml'], dir)).toEqual({ code: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('has unit tests for every alert, and they fail when a rule is broken', () => {
    const rules = RulesFile.parse(parse(readFileSync(join(dir, 'florete-alerts.yml'), 'utf8')));
    const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert)).filter((a): a is string => Boolean(a));
    const tests = readFileSync(join(dir, 'florete-alerts.test.yml'), 'utf8');
    for (const alert of alerts) expect({ alert, tested: tests.includes(`alertname: ${alert}\n`) }).toEqual({ alert, tested: true });
    // Every threshold raised tenfold: the tests that expect an alert must now fail.
    const broken = readFileSync(join(dir, 'florete-alerts.yml'), 'utf8').replace(/(\) >|==) (\d+(?:\.\d+)?)(?=$| and )/gm, (_, op: string, n: string) =>
      op === '==' ? `${op} 42` : `${op} ${Number(n) * 10 + 10}`,
    );
    writeFileSync(join(dir, 'florete-alerts.yml'), broken);
    try {
      const r = promtool(['test', 'rules', 'florete-alerts.test.yml'], dir);
      expect(r.code).not.toBe(0);
      for (const alert of alerts) expect(r.output).toContain(`alertname: ${alert}`);
    } finally {
      cpSync(join(PROMETHEUS, 'florete-alerts.yml'), join(dir, 'florete-alerts.yml'));
    }
  });
});

describe('the alert rules and the dashboard name only metrics the coordinator exports', () => {
  let coordinator: CoordinatorProcess;
  let exported: Set<string>;
  beforeAll(async () => {
    coordinator = await startCoordinatorProcess(hasPostgres ? { databaseUrl: await createPostgresDatabase() } : {});
    const r = await new Client(coordinator.url, coordinator.adminToken).get('/metrics');
    expect(r.status).toBe(200);
    // `up` is Prometheus's own, one per scrape target.
    exported = new Set([...exportedNames(r.text), 'up']);
  });
  afterAll(async () => coordinator?.stop());

  it('the alert rules', () => {
    const rules = RulesFile.parse(parse(readFileSync(join(PROMETHEUS, 'florete-alerts.yml'), 'utf8')));
    const used = rules.groups.flatMap((g) => g.rules.flatMap((r) => metricNames(r.expr).map((name) => ({ rule: r.alert ?? r.record, name }))));
    expect(used.length).toBeGreaterThan(8);
    expect(used.filter((u) => !exported.has(u.name))).toEqual([]);
  });

  it('the Grafana dashboard', () => {
    const dashboard = Dashboard.parse(JSON.parse(readFileSync(DASHBOARD, 'utf8')));
    const used = dashboard.panels.flatMap((p) => p.targets.flatMap((t) => metricNames(t.expr).map((name) => ({ panel: p.title, name }))));
    expect(used.length).toBeGreaterThan(20);
    expect(used.filter((u) => !exported.has(u.name))).toEqual([]);
    // The gauges this dashboard is for are among them.
    for (const name of [
      'florete_nodes',
      'florete_nodes_by_contact_age',
      'florete_nodes_by_agent_version',
      'florete_checkpoint_age_seconds',
      'florete_build_info',
      'florete_ready',
    ]) {
      expect(used.map((u) => u.name)).toContain(name);
    }
  });

  // The coordinator's own: prom-client's default Node.js metrics name three gauges *_total, which is theirs to change.
  it("the coordinator's counters are counters, and only they end in _total", async () => {
    const r = await new Client(coordinator.url, coordinator.adminToken).get('/metrics');
    const types = [...r.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => ({ name: m[1], type: m[2] }));
    expect(types).toEqual(
      expect.arrayContaining([
        { name: 'florete_mirror_commits_total', type: 'counter' },
        { name: 'florete_mirror_push_failures_total', type: 'counter' },
        { name: 'florete_build_info', type: 'gauge' },
      ]),
    );
    expect(types.filter((t) => t.name.startsWith('florete_') && t.name.endsWith('_total') !== (t.type === 'counter'))).toEqual([]);
  });
});
