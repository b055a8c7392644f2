import { AgentJson } from '#contracts';
import { formatDiagnostic } from './diagnostics.js';
import { compileRete } from './compile.js';
import { EXAMPLE_RETE } from './example.js';
import type { Source } from './parse-file.js';
import { validateRete } from './validate.js';

/** The example rete with `rete.yaml`'s defaults replaced and, optionally, a sync block for beta. */
function rete(defaultsSync: string, betaSync?: string): Source[] {
  const sources = Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text }));
  const reteYaml = `mesh:\n  name: example\n  coordinator: https://coordinator.example.net\n  safety_net: serial console\n\ndefaults:\n  sync:\n${defaultsSync}`;
  const servers = `nodes:\n  - name: alpha\n    kind: server\n    listen: 10.0.0.1:7946\n    tags: [web]\n    services:\n      - name: web\n        port: 443\n\n  - name: beta\n    kind: server\n    listen: 10.0.0.2:7946\n${betaSync ?? ''}`;
  return [
    ...sources.filter((s) => s.file !== 'rete.yaml' && s.file !== 'nodes/servers.yaml'),
    { file: 'rete.yaml', text: reteYaml },
    { file: 'nodes/servers.yaml', text: servers },
  ];
}

const errors = (sources: Source[]) =>
  validateRete(sources)
    .diagnostics.filter((d) => d.severity === 'error')
    .map(formatDiagnostic);
const agentOf = (sources: Source[], node: string) => {
  const v = validateRete(sources);
  if (!v.rete) throw new Error(v.diagnostics.map(formatDiagnostic).join('\n'));
  return AgentJson.parse(JSON.parse(compileRete(v.rete).get(node)?.get('agent.json') as string));
};

describe('sync.confirm_within and health checks', () => {
  it('given no window, when compiled, then agent.json has no confirmation keys (its bytes stay as before)', () => {
    const sync = agentOf(rete('    poll_interval: 5m\n'), 'alpha').sync;
    expect(sync).toEqual({ poll_interval: 300, splay: 30 });
  });

  it('given a mesh-wide window and checks, when compiled, then every node gets them with defaults filled in', () => {
    const sources = rete(
      [
        '    confirm_within: 5m',
        '    health_checks:',
        '      - name: vertex',
        '        command: systemctl is-active florete-vertex',
        '      - name: ssh',
        '        tcp: 127.0.0.1:22',
        '        timeout: 3s',
        '      - name: api',
        '        http: https://127.0.0.1:8443/healthz',
        '',
      ].join('\n'),
    );
    expect(agentOf(sources, 'laptop').sync).toEqual({
      poll_interval: 300,
      splay: 30,
      confirm_within: 300,
      health_checks: [
        { name: 'vertex', kind: 'command', command: 'systemctl is-active florete-vertex', timeout: 10 },
        { name: 'ssh', kind: 'tcp', address: '127.0.0.1:22', timeout: 3 },
        { name: 'api', kind: 'http', url: 'https://127.0.0.1:8443/healthz', expect_status: 200, timeout: 10 },
      ],
    });
  });

  it('given a node override, when compiled, then its window and its list replace the defaults for it alone', () => {
    const sources = rete(
      '    confirm_within: 5m\n    health_checks:\n      - name: ssh\n        tcp: 127.0.0.1:22\n',
      '    sync:\n      confirm_within: 2m\n      health_checks:\n        - name: web\n          http: http://127.0.0.1/\n          expect_status: 204\n',
    );
    expect(agentOf(sources, 'beta').sync.confirm_within).toBe(120);
    expect(agentOf(sources, 'beta').sync.health_checks).toEqual([{ name: 'web', kind: 'http', url: 'http://127.0.0.1/', expect_status: 204, timeout: 10 }]);
    expect(agentOf(sources, 'alpha').sync.confirm_within).toBe(300);
    expect(agentOf(sources, 'alpha').sync.health_checks?.map((c) => c.name)).toEqual(['ssh']);
  });

  it('given a check with two kinds, when validated, then the error is located at the check', () => {
    expect(errors(rete('    confirm_within: 5m\n    health_checks:\n      - name: both\n        tcp: 127.0.0.1:22\n        command: "true"\n'))).toEqual([
      'rete.yaml:10:9: defaults.sync.health_checks[0]: a health check takes exactly one of command, tcp or http [bad_health_check]',
    ]);
  });

  it('given checks without a window, when validated, then it is an error where the list is written, once', () => {
    expect(errors(rete('    health_checks:\n      - name: ssh\n        tcp: 127.0.0.1:22\n'))).toEqual([
      'rete.yaml:9:7: defaults.sync.health_checks: the defaults have health checks but no confirmation window: set sync.confirm_within, the time they have to pass [bad_health_check]',
    ]);
    expect(errors(rete('    poll_interval: 5m\n', '    sync:\n      health_checks:\n        - name: ssh\n          tcp: 127.0.0.1:22\n'))).toEqual([
      'nodes/servers.yaml:15:9: nodes[1].sync.health_checks: node "beta" has health checks but no confirmation window: set sync.confirm_within, the time they have to pass [bad_health_check]',
    ]);
  });

  it('given bad values, when validated, then each is reported with its place and code, and nothing compiles', () => {
    const sources = rete(
      '    confirm_within: 5s\n    health_checks:\n      - name: a\n        http: ftp://x/\n      - name: b\n        tcp: nowhere\n      - name: c\n        tcp: 127.0.0.1:22\n        expect_status: 200\n      - name: a\n        command: "true"\n',
    );
    expect(errors(sources)).toEqual([
      'rete.yaml:8:21: defaults.sync.confirm_within: must be between 10s and 30d (got "5s") [bad_duration]',
      'rete.yaml:11:15: defaults.sync.health_checks[0].http: must be an http(s) URL such as https://127.0.0.1:8443/healthz (got "ftp://x/") [bad_url]',
      'rete.yaml:13:14: defaults.sync.health_checks[1].tcp: must be host:port (IPv6 hosts in brackets) (got "nowhere") [bad_listen_address]',
      'rete.yaml:16:24: defaults.sync.health_checks[2].expect_status: expect_status belongs to an http check [bad_health_check]',
    ]);
    expect(validateRete(sources).rete).toBeUndefined();
  });

  it('given two checks of one name, when validated, then the second is reported', () => {
    expect(
      errors(rete('    confirm_within: 5m\n    health_checks:\n      - name: a\n        command: "true"\n      - name: a\n        tcp: 127.0.0.1:1\n')),
    ).toEqual(['rete.yaml:12:15: defaults.sync.health_checks[1].name: health check "a" is named twice in this list [duplicate_name]']);
  });
});
