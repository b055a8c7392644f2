import fc from 'fast-check';
import { formatDiagnostic, type Diagnostic } from './diagnostics.js';
import { EXAMPLE_RETE } from './example.js';
import type { Source } from './parse-file.js';
import { validateRete } from './validate.js';
import { compileRete } from './compile.js';

const example = (): Source[] => Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text }));
const replace = (sources: Source[], file: string, text: string): Source[] => [...sources.filter((s) => s.file !== file), { file, text }];
const brief = (d: Diagnostic) => `${d.file}:${d.line}:${d.col} ${d.code}`;
const errorsOf = (sources: Source[]) =>
  validateRete(sources)
    .diagnostics.filter((d) => d.severity === 'error')
    .map(brief);

describe('validate', () => {
  it('accepts the example rete without errors or warnings', () => {
    const v = validateRete(example());
    expect(v.diagnostics).toEqual([]);
    expect(v.rete?.nodes.map((n) => n.name)).toEqual(['alpha', 'beta', 'laptop']);
  });

  it('names both places when a node is defined in two files', () => {
    const sources = [...example(), { file: 'z/more.yaml', text: 'nodes:\n  - name: beta\n    kind: device\n    listen: 10.9.9.9:1\n' }];
    const [d] = validateRete(sources).diagnostics;
    expect(brief(d)).toBe('z/more.yaml:2:11 duplicate_name');
    expect(d.message).toBe('node "beta" is defined twice: here and at nodes/servers.yaml:11:5');
  });

  it('reports every error at once, sorted by place, each as file:line:col: path: message [code]', () => {
    const sources = replace(
      example(),
      'nodes/devices.yaml',
      'nodes:\n  - name: Laptop\n    kind: phone\n    listen: nowhere\n    sync: {poll_interval: soon}\n',
    );
    expect(validateRete(sources).diagnostics.map(formatDiagnostic)).toEqual([
      'nodes/devices.yaml:2:11: nodes[0].name: must be a DNS label: 1-63 lowercase letters, digits or "-", not starting or ending with "-" (got "Laptop") [bad_name]',
      'nodes/devices.yaml:3:11: nodes[0].kind: must be one of "server", "device", not the string "phone" [invalid_value]',
      'nodes/devices.yaml:4:13: nodes[0].listen: must be host:port (IPv6 hosts in brackets) (got "nowhere") [bad_listen_address]',
      'nodes/devices.yaml:5:27: nodes[0].sync.poll_interval: must be a duration such as 30s, 5m, 1h or 1h30m (got "soon") [bad_duration]',
    ]);
  });

  it('prints warnings without failing', () => {
    const sources = replace(example(), 'policy.yaml', 'groups:\n  - name: ops\n    members: [beta]\n');
    const v = validateRete(sources);
    expect(v.rete).toBeDefined();
    expect(v.diagnostics.map((d) => `${d.severity} ${brief(d)}`)).toEqual([
      'warning nodes/servers.yaml:7:9 unused_service',
      'warning policy.yaml:2:5 unused_group',
    ]);
  });

  it('does not check references into a file that failed, so one typo is not twenty errors', () => {
    const sources = replace(example(), 'nodes/servers.yaml', 'nodes:\n  - name: alpha\n    kind: [\n');
    expect(errorsOf(sources)).toEqual(['nodes/servers.yaml:4:1 yaml_syntax']);
  });

  it('says where a missing mesh would go and that an empty folder is not a rete', () => {
    expect(errorsOf(example().filter((s) => s.file !== 'rete.yaml'))).toEqual(['nodes/devices.yaml:1:1 missing_mesh']);
    expect(errorsOf([])).toEqual(['.:1:1 no_files']);
  });

  it('reports the same diagnostics whatever order the files are read in', () => {
    const broken = [
      ...example(),
      { file: 'x.yaml', text: 'nodes:\n  - name: alpha\n    kind: server\n    listen: 1.2.3.4:5\n' },
      { file: 'y.yaml', text: 'acl:\n  - from: [group:nobody]\n    to: [beta:web]\n' },
    ];
    const expected = validateRete(broken).diagnostics;
    fc.assert(
      fc.property(fc.shuffledSubarray(broken, { minLength: broken.length }), (order) => {
        expect(validateRete(order).diagnostics).toEqual(expected);
      }),
    );
  });

  it('suggests the key a one-letter slip meant', () => {
    const sources = replace(example(), 'nodes/devices.yaml', 'nodes:\n  - name: laptop\n    kind: device\n    listn: 1.2.3.4:5\n');
    expect(validateRete(sources).diagnostics.map((d) => d.message)).toContain('unknown key "listn" (did you mean "listen"?)');
  });

  it('cuts a huge value in a message to its start and length', () => {
    // A thousand "1s" are a valid poll interval of 2000 characters.
    const interval = '1s'.repeat(1000);
    const sources = replace(
      example(),
      'rete.yaml',
      `mesh: { name: lab, coordinator: https://c.example }\ndefaults:\n  sync: { poll_interval: ${interval}, splay: 1h }\n`,
    );
    const messages = validateRete(sources).diagnostics.map((d) => d.message);
    expect(messages).toContain(`splay "1h" is longer than the poll interval "${'1s'.repeat(40)}…" (2000 characters)`);
  });

  describe('safety net', () => {
    const MESH = 'mesh:\n  name: lab\n  coordinator: https://c.example\n';
    const SERVERS = [
      'nodes:',
      '  - name: alpha',
      '    kind: server',
      '    listen: 10.0.0.1:7946',
      '    services:',
      '      - { name: web, port: 443 }',
      '      - { name: ssh, port: 2222 }',
      '  - name: beta',
      '    kind: server',
      '    listen: 10.0.0.2:7946',
      '    services:',
      '      - { name: admin, port: 22 }',
      '',
    ].join('\n');
    const DEVICES = 'nodes:\n  - name: laptop\n    kind: device\n    listen: 192.168.1.20:7946\n    services:\n      - { name: ssh, port: 22 }\n';
    const rete = (mesh: string): Source[] => [
      { file: 'rete.yaml', text: mesh },
      { file: 'nodes/servers.yaml', text: SERVERS },
      { file: 'nodes/devices.yaml', text: DEVICES },
    ];
    const safetyWarnings = (sources: Source[]) => validateRete(sources).diagnostics.filter((d) => d.code === 'no_safety_net');

    it('warns, without failing, at each server service that is SSH by port or by name when the mesh notes no safety net', () => {
      const v = validateRete(rete(MESH));
      expect(v.rete).toBeDefined();
      const found = safetyWarnings(rete(MESH));
      expect(found.map((d) => `${d.severity} ${brief(d)} ${d.path}`)).toEqual([
        'warning nodes/servers.yaml:7:9 no_safety_net nodes[0].services[1]',
        'warning nodes/servers.yaml:12:9 no_safety_net nodes[1].services[0]',
      ]);
      expect(formatDiagnostic(found[1])).toBe(
        'nodes/servers.yaml:12:9: nodes[1].services[0]: warning: server "beta" publishes SSH (service "admin", port 22) over the mesh, and the rete notes no other way in: a bad publish activates with no confirmation, so keep an out-of-band path and name it in mesh.safety_net [no_safety_net]',
      );
    });

    it('is quiet once mesh.safety_net says how else to get in, and never warns about devices', () => {
      expect(safetyWarnings(rete(`${MESH}  safety_net: hypervisor console\n`))).toEqual([]);
      expect(safetyWarnings(rete(MESH)).map((d) => d.file)).not.toContain('nodes/devices.yaml');
    });

    it('refuses a blank safety net: a note that says nothing is no way in', () => {
      expect(errorsOf(rete(`${MESH}  safety_net: "  "\n`))).toEqual(['rete.yaml:4:15 invalid_value']);
    });

    it('compiles to the same artifacts with or without it: it is a note for people', () => {
      const compiled = (mesh: string) => compileRete(validateRete(rete(mesh)).rete!);
      expect(compiled(`${MESH}  safety_net: hypervisor console\n`)).toEqual(compiled(MESH));
    });

    it('is shown by the example rete init writes', () => {
      expect(EXAMPLE_RETE['rete.yaml']).toMatch(/^  safety_net: \S/m);
    });
  });
});
