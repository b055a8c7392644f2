import { formatDiagnostic, type Diagnostic } from './diagnostics.js';
import { EXAMPLE_RETE } from './example.js';
import type { Source } from './parse-file.js';
import type { ReadSource } from './resolve-resources.js';

/** The example's sources are text; the Source type also allows raw bytes. */
const textOf = (s: Source): string => ('text' in s ? s.text : new TextDecoder().decode(s.bytes));
import { validateRete } from './validate.js';

const example = (): Source[] => Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text }));
const withResources = (text: string, more: Source[] = []): Source[] => [...example(), { file: 'resources.yaml', text }, ...more];
const disk: Record<string, string> = { 'files/motd': 'managed by florete\n', 'files/issue': 'issue\n' };
const readSource: ReadSource = (path) => (path in disk ? { bytes: new TextEncoder().encode(disk[path]) } : { problem: 'no such file in the rete' });
const brief = (d: Diagnostic) => `${d.file}:${d.line}:${d.col} ${d.code}`;
const errorsOf = (sources: Source[], read = readSource) =>
  validateRete(sources, read)
    .diagnostics.filter((d) => d.severity === 'error')
    .map(brief);
const resourcesOf = (sources: Source[]) => {
  const { rete, diagnostics } = validateRete(sources, readSource);
  if (!rete) throw new Error(diagnostics.map(formatDiagnostic).join('\n'));
  return Object.fromEntries(
    rete.nodes.map((n) => [n.name, [...n.resources.files.map((f) => `file ${f.path}`), ...n.resources.packages.map((p) => `package ${p.name} ${p.version}`)]]),
  );
};

describe('resources in the rete', () => {
  it('gives each node its own resources, then the selected entries in file order, files before packages', () => {
    const sources = withResources(
      `resources:
  - select: { tags: [web] }
    packages:
      - { name: nginx, version: 1.22.1-9+deb12u11 }
    files:
      - { path: /etc/nginx/conf.d/site.conf, content: "server {}\\n" }
  - select: { groups: [ops] }
    files:
      - { path: /etc/motd, source: files/motd }
  - select: { nodes: [alpha, laptop] }
    packages:
      - { name: curl, version: "7.88.1-10+deb12u8", manager: apt }
`,
      [
        {
          file: 'aaa.yaml',
          text: `nodes:
  - name: gamma
    kind: server
    listen: 10.0.0.3:7946
    tags: [web]
    resources:
      packages:
        - { name: htop, version: 3.2.2-2 }
      files:
        - { path: /etc/issue, source: ./files//issue }
resources:
  - select: { tags: [backend, web] }
    files:
      - { path: /etc/first, content: "" }
`,
        },
      ],
    );
    expect(resourcesOf(sources)).toEqual({
      alpha: ['file /etc/first', 'file /etc/nginx/conf.d/site.conf', 'package nginx 1.22.1-9+deb12u11', 'package curl 7.88.1-10+deb12u8'],
      beta: ['file /etc/first', 'file /etc/motd'],
      gamma: ['file /etc/issue', 'file /etc/first', 'file /etc/nginx/conf.d/site.conf', 'package htop 3.2.2-2', 'package nginx 1.22.1-9+deb12u11'],
      laptop: ['file /etc/motd', 'package curl 7.88.1-10+deb12u8'],
    });
  });

  it('fills in the defaults (root:root, 0644, apt) and reads source bytes from the rete', () => {
    const { rete } = validateRete(
      withResources(`resources:
  - select: { nodes: [alpha] }
    files:
      - { path: /etc/motd, source: files/motd }
      - { path: /usr/local/bin/hello, content: "#!/bin/sh\\n", mode: "755", owner: www-data, group: adm }
    packages:
      - { name: nginx, version: "1.0" }
`),
      readSource,
    );
    const alpha = rete?.nodes.find((n) => n.name === 'alpha');
    expect(
      alpha?.resources.files.map(({ path, mode, owner, group, content }) => ({ path, mode, owner, group, text: new TextDecoder().decode(content) })),
    ).toEqual([
      { path: '/etc/motd', mode: '0644', owner: 'root', group: 'root', text: 'managed by florete\n' },
      { path: '/usr/local/bin/hello', mode: '0755', owner: 'www-data', group: 'adm', text: '#!/bin/sh\n' },
    ]);
    expect(alpha?.resources.packages.map(({ manager, name, version }) => ({ manager, name, version }))).toEqual([
      { manager: 'apt', name: 'nginx', version: '1.0' },
    ]);
  });

  it('reports each malformed value with its code, as file:line:col: path: message [code]', () => {
    const sources = withResources(`resources:
  - select: { tags: [web] }
    files:
      - { path: etc/motd, content: x }
      - { path: /etc/../motd, content: x }
      - { path: /etc/a, content: x, mode: 644 }
      - { path: /etc/b, content: x, mode: "rw-r--r--" }
      - { path: /etc/c, source: /etc/passwd }
      - { path: /etc/d, source: ../secrets/key }
      - { path: /etc/e }
      - { path: /etc/f, content: x, source: files/motd }
      - { path: /etc/g, content: x, owner: Root }
    packages:
      - { name: N, version: "1.0" }
      - { name: nginx, version: latest }
  - select: { tags: [web], groups: [ops] }
`);
    expect(validateRete(sources, readSource).diagnostics.map(formatDiagnostic)).toEqual([
      'resources.yaml:4:17: resources[0].files[0].path: must be an absolute path without empty, "." or ".." segments or a trailing "/" (got "etc/motd") [bad_path]',
      'resources.yaml:5:17: resources[0].files[1].path: must be an absolute path without empty, "." or ".." segments or a trailing "/" (got "/etc/../motd") [bad_path]',
      'resources.yaml:6:43: resources[0].files[2].mode: must be a quoted octal string such as "0644": unquoted, YAML reads it as the number 644 [bad_mode]',
      'resources.yaml:7:43: resources[0].files[3].mode: must be an octal mode such as "0644" or "0755" (got "rw-r--r--") [bad_mode]',
      'resources.yaml:8:33: resources[0].files[4].source: must be a path inside the rete, from its root (files/motd), not an absolute path (got "/etc/passwd") [bad_source]',
      'resources.yaml:9:33: resources[0].files[5].source: must stay inside the rete: ".." is not allowed (got "../secrets/key") [bad_source]',
      'resources.yaml:10:9: resources[0].files[6]: a file needs its bytes: "content" (inline) or "source" (a file of the rete) [missing_key]',
      'resources.yaml:11:45: resources[0].files[7].source: a file takes "content" or "source", not both (got "files/motd") [invalid_value]',
      'resources.yaml:12:44: resources[0].files[8].owner: must be a user or group name: lowercase letters, digits, "_" or "-", starting with a letter or "_", at most 32 characters (got "Root") [bad_name]',
      'resources.yaml:14:17: resources[0].packages[0].name: must be a Debian package name: lowercase letters, digits, "+", "-" and ".", at least 2 characters, starting with a letter or digit (got "N") [bad_package_name]',
      'resources.yaml:15:33: resources[0].packages[1].version: must be an exact Debian version, [epoch:]upstream[-revision], with the upstream version starting with a digit (e.g. 1.22.1-9+deb12u11) (got "latest") [bad_version]',
      'resources.yaml:16:13: resources[1].select: must name exactly one of tags, groups or nodes [bad_selector]',
    ]);
  });

  it('refuses a manager it does not know and keys it does not know', () => {
    expect(
      errorsOf(withResources('resources:\n  - select: { nodes: [alpha] }\n    packages:\n      - { name: nginx, version: "1.0", manager: dnf }\n')),
    ).toEqual(['resources.yaml:4:49 invalid_value']);
    const v = validateRete(example().map((s) => (s.file === 'nodes/devices.yaml' ? { ...s, text: `${textOf(s)}    resources:\n      file: []\n` } : s)));
    expect(v.diagnostics.map((d) => `${brief(d)} ${d.message}`)).toEqual(['nodes/devices.yaml:7:7 unknown_key unknown key "file" (did you mean "files"?)']);
  });

  it('reports a source that is missing or that the reader refuses (a symlink out of the rete), once per declaration', () => {
    const read: ReadSource = (path) => (path === 'files/link' ? { problem: 'leads out of the rete, to /etc/shadow' } : readSource(path));
    const sources = withResources(`resources:
  - select: { tags: [web, backend] }
    files:
      - { path: /etc/a, source: files/nope }
      - { path: /etc/b, source: files/link }
`);
    expect(validateRete(sources, read).diagnostics.map(formatDiagnostic)).toEqual([
      'resources.yaml:4:33: resources[0].files[0].source: files/nope: no such file in the rete [bad_source]',
      'resources.yaml:5:33: resources[0].files[1].source: files/link: leads out of the rete, to /etc/shadow [bad_source]',
    ]);
  });

  it('names unknown tags, groups and nodes in a selector with the codes ACL rules use', () => {
    expect(
      errorsOf(withResources('resources:\n  - select: { tags: [web, nosuch] }\n  - select: { groups: [nogroup] }\n  - select: { nodes: [alpha, ghost] }\n')),
    ).toEqual(['resources.yaml:2:27 unknown_tag', 'resources.yaml:3:24 unknown_group', 'resources.yaml:4:30 unknown_node']);
  });

  it('refuses two files on one path for a node, naming the first place and the nodes it hits', () => {
    const sources = withResources(`resources:
  - select: { tags: [web, backend, staff] }
    files:
      - { path: /etc/motd, content: a }
  - select: { groups: [ops] }
    files:
      - { path: /etc/motd, content: b }
`);
    expect(validateRete(sources, readSource).diagnostics.map(formatDiagnostic)).toEqual([
      'resources.yaml:7:17: resources[1].files[0].path: file /etc/motd is declared twice for nodes beta and laptop: here and at resources.yaml:4:9 [duplicate_path]',
    ]);
  });

  it('puts a node-level file first: the selected entry is the second declaration', () => {
    const sources = withResources('resources:\n  - select: { nodes: [laptop] }\n    files:\n      - { path: /etc/motd, content: a }\n', [
      {
        file: 'zz.yaml',
        text: 'nodes:\n  - name: gamma\n    kind: server\n    listen: 10.0.0.3:7946\n    resources:\n      files:\n        - { path: /etc/motd, content: b }\n',
      },
    ]);
    const moved = sources.map((s) => (s.file === 'resources.yaml' ? { ...s, text: textOf(s).replace('[laptop]', '[gamma]') } : s));
    expect(validateRete(moved, readSource).diagnostics.map(formatDiagnostic)).toEqual([
      'resources.yaml:4:17: resources[0].files[0].path: file /etc/motd is declared twice for node "gamma": here and at zz.yaml:7:11 [duplicate_path]',
    ]);
  });

  it("refuses a file inside another file, and anything in or over the agent's own folders", () => {
    const sources = withResources(`resources:
  - select: { nodes: [alpha] }
    files:
      - { path: /etc/app, content: a }
      - { path: /etc/app/conf, content: b }
      - { path: /etc/florete/agent.yaml, content: c }
      - { path: /var/lib, content: d }
`);
    expect(validateRete(sources, readSource).diagnostics.map(formatDiagnostic)).toEqual([
      'resources.yaml:5:17: resources[0].files[1].path: file /etc/app/conf needs /etc/app to be a folder, but /etc/app is a file for node "alpha" (at resources.yaml:4:9) [duplicate_path]',
      "resources.yaml:6:17: resources[0].files[2].path: /etc/florete/agent.yaml collides with the agent's own /etc/florete: no resource may write in or over it [duplicate_path]",
      "resources.yaml:7:17: resources[0].files[3].path: /var/lib collides with the agent's own /var/lib/florete: no resource may write in or over it [duplicate_path]",
    ]);
  });

  it('takes one package at one version from two places, and refuses it at two versions', () => {
    const same = withResources(
      'resources:\n  - select: { tags: [web] }\n    packages: [{ name: nginx, version: "1.0" }]\n  - select: { nodes: [alpha] }\n    packages: [{ name: nginx, version: "1.0" }]\n',
    );
    expect(resourcesOf(same).alpha).toEqual(['package nginx 1.0']);
    const clash = same.map((s) => (s.file === 'resources.yaml' ? { ...s, text: textOf(s).replace(/"1\.0" \}\]\n$/, '"1:1.0" }]\n') } : s));
    expect(validateRete(clash, readSource).diagnostics.map(formatDiagnostic)).toEqual([
      'resources.yaml:5:40: resources[1].packages[0].version: package nginx is 1:1.0 here but 1.0 at resources.yaml:3:16, both for node "alpha" [conflicting_package]',
    ]);
  });

  it('reports a clash shared by many nodes once, with a count', () => {
    const nodes = Array.from({ length: 40 }, (_, i) => `  - { name: n${i}, kind: server, listen: 10.1.0.${i}:7946, tags: [fleet] }`).join('\n');
    const sources = withResources(
      'resources:\n  - select: { tags: [fleet] }\n    packages: [{ name: florete-agent, version: 0.1.0 }]\n  - select: { tags: [fleet] }\n    packages: [{ name: florete-agent, version: 0.2.0 }]\n',
      [{ file: 'fleet.yaml', text: `nodes:\n${nodes}\n` }],
    );
    const { diagnostics } = validateRete(sources, readSource);
    expect(diagnostics.map((d) => d.message)).toEqual([
      'package florete-agent is 0.2.0 here but 0.1.0 at resources.yaml:3:16, both for 40 nodes (n0, n1, n10, …)',
    ]);
  });

  it('refuses more distinct file contents than a node set can carry', () => {
    const files = Array.from({ length: 254 }, (_, i) => `      - { path: /srv/f${i}, content: "${i}" }`).join('\n');
    const sources = withResources(`resources:\n  - select: { nodes: [beta] }\n    files:\n${files}\n`);
    expect(errorsOf(sources)).toEqual(['nodes/servers.yaml:11:5 too_many_artifacts']);
    const same = withResources(`resources:\n  - select: { nodes: [beta] }\n    files:\n${files.replace(/content: "\d+"/g, 'content: "x"')}\n`);
    expect(errorsOf(same)).toEqual([]);
  });

  it('refuses too many file contents on each node the same entries select, not only the first', () => {
    const nodes = Array.from({ length: 3 }, (_, i) => `  - { name: m${i}, kind: server, listen: 10.2.0.${i}:7946, tags: [many] }`).join('\n');
    const files = Array.from({ length: 254 }, (_, i) => `      - { path: /srv/f${i}, content: "${i}" }`).join('\n');
    const sources = withResources(`resources:\n  - select: { tags: [many] }\n    files:\n${files}\n`, [{ file: 'many.yaml', text: `nodes:\n${nodes}\n` }]);
    expect(errorsOf(sources)).toEqual(['many.yaml:2:5 too_many_artifacts', 'many.yaml:3:5 too_many_artifacts', 'many.yaml:4:5 too_many_artifacts']);
  });

  it('gives nodes the same entries select the same lists, and a node with its own resources its own', () => {
    const nodes = Array.from({ length: 4 }, (_, i) => `  - { name: w${i}, kind: server, listen: 10.3.0.${i}:7946, tags: [webs] }`).join('\n');
    const own =
      '  - name: w9\n    kind: server\n    listen: 10.3.0.9:7946\n    tags: [webs]\n    resources:\n      packages: [{ name: curl, version: "1.0" }]\n';
    const sources = withResources(
      'resources:\n  - select: { tags: [webs] }\n    files: [{ path: /etc/motd, content: hi }]\n  - select: { nodes: [w2] }\n    packages: [{ name: jq, version: "1.6" }]\n',
      [{ file: 'webs.yaml', text: `nodes:\n${nodes}\n${own}` }],
    );
    const got = resourcesOf(sources);
    expect({ w0: got.w0, w1: got.w1, w2: got.w2, w3: got.w3, w9: got.w9 }).toEqual({
      w0: ['file /etc/motd'],
      w1: ['file /etc/motd'],
      w2: ['file /etc/motd', 'package jq 1.6'],
      w3: ['file /etc/motd'],
      w9: ['file /etc/motd', 'package curl 1.0'],
    });
  });

  it('counts a group that selects resources as used', () => {
    const sources = withResources(
      'groups:\n  - { name: fleet, members: [alpha] }\nresources:\n  - select: { groups: [fleet] }\n    packages: [{ name: curl, version: "1.0" }]\n',
    );
    expect(validateRete(sources, readSource).diagnostics).toEqual([]);
  });

  it('leaves nodes without resources with empty lists', () => {
    const { rete } = validateRete(example());
    expect(rete?.nodes.map((n) => n.resources)).toEqual([
      { files: [], packages: [] },
      { files: [], packages: [] },
      { files: [], packages: [] },
    ]);
  });
});
