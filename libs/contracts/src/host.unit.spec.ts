import { agentPathAt, canonicalMode, DEBIAN_PACKAGE_NAME, isDebianVersion, isHostPath, POSIX_NAME } from './host.schema.js';
import { ResourcesJson } from './artifacts.schema.js';

describe('host values', () => {
  it('accepts Debian versions as policy 5.6.12 spells them', () => {
    for (const v of [
      '1.0',
      '0.1.0',
      '1.22.1-9+deb12u11',
      '1:2.30-1',
      '2:8.2.3995-1+deb12u2',
      '1.0~rc1-1',
      '7.88.1-10+deb12u8',
      '1.2-3-4',
      '20240101',
      '1.0+dfsg-1.1~bpo12+1',
      '3.0.0-Beta',
    ]) {
      expect({ v, ok: isDebianVersion(v) }).toEqual({ v, ok: true });
    }
  });

  it('refuses what is not an exact Debian version', () => {
    for (const v of [
      '',
      'v1.0',
      'latest',
      '>= 1.0',
      '1.0-',
      '1.0 ',
      ':1.0',
      'a:1.0',
      '1:',
      '1:v2',
      '1.0-1_2',
      '1.0_1',
      '1:2:3',
      '1.*',
      '1.0-1:2',
      '1234567890:1',
    ]) {
      expect({ v, ok: isDebianVersion(v) }).toEqual({ v, ok: false });
    }
  });

  it('accepts Debian package names and nothing else', () => {
    for (const n of ['nginx', 'g++', 'libc6', 'florete-agent', 'python3.11', '0ad']) expect(DEBIAN_PACKAGE_NAME.test(n)).toBe(true);
    for (const n of ['N', 'a', 'Nginx', '-nginx', '.x', 'ng_inx', 'nginx:amd64', 'ngi nx']) expect(DEBIAN_PACKAGE_NAME.test(n)).toBe(false);
  });

  it('takes host paths in their one normal spelling only', () => {
    for (const p of ['/etc/motd', '/a', '/etc/apt/sources.list.d/florete.list', '/srv/.hidden']) expect(isHostPath(p)).toBe(true);
    for (const p of ['', '/', 'etc/motd', './etc', '/etc//motd', '/etc/./motd', '/etc/../motd', '/etc/', '/etc/mo\ntd']) expect(isHostPath(p)).toBe(false);
  });

  it('knows the agent folders a path writes in or over', () => {
    expect(agentPathAt('/etc/florete/agent.yaml')).toBe('/etc/florete');
    expect(agentPathAt('/etc/florete')).toBe('/etc/florete');
    expect(agentPathAt('/var/lib/florete/agent/state.json')).toBe('/var/lib/florete');
    expect(agentPathAt('/var/lib')).toBe('/var/lib/florete');
    expect(agentPathAt('/etc')).toBe('/etc/florete');
    expect(agentPathAt('/etc/florete-other')).toBeUndefined();
    expect(agentPathAt('/etc/motd')).toBeUndefined();
  });

  it('spells modes with four digits and names as useradd does', () => {
    expect([canonicalMode('644'), canonicalMode('0600'), canonicalMode('2755')]).toEqual(['0644', '0600', '2755']);
    for (const n of ['root', 'www-data', '_apt', 'systemd-network']) expect(POSIX_NAME.test(n)).toBe(true);
    for (const n of ['Root', '1user', 'a b', '', 'x'.repeat(33)]) expect(POSIX_NAME.test(n)).toBe(false);
  });
});

describe('resources.json', () => {
  const content = { sha256: 'a'.repeat(64), size: 3 };
  const file = (path: string) => ({ path, mode: '0644', owner: 'root', group: 'root', content });
  const apt = (name: string, version: string) => ({ manager: 'apt', name, version });
  const problems = (value: unknown) => ResourcesJson.safeParse(value).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`) ?? [];

  it('parses a valid set of files and packages', () => {
    expect(problems({ files: [file('/etc/motd'), file('/etc/issue')], packages: [apt('nginx', '1.22.1-9'), apt('curl', '7.88.1-10')] })).toEqual([]);
  });

  it('refuses a path twice, a file inside a file, the agent folders and a package twice', () => {
    expect(
      problems({
        files: [file('/etc/motd'), file('/etc/motd'), file('/etc/motd/x'), file('/etc/florete/x')],
        packages: [apt('nginx', '1.0'), apt('nginx', '2.0')],
      }),
    ).toEqual([
      'files.1.path: /etc/motd is listed twice',
      'files.2.path: /etc/motd/x lies inside the file /etc/motd',
      "files.3.path: /etc/florete/x would overwrite the agent's own /etc/florete (reserved: /etc/florete, /var/lib/florete)",
      'packages.1.name: apt package nginx is listed twice',
    ]);
  });

  it('knows apt as the only manager for now, and checks its names and versions', () => {
    expect(problems({ files: [], packages: [{ manager: 'dnf', name: 'nginx', version: '1.0' }] })).toHaveLength(1);
    expect(problems({ files: [], packages: [apt('Nginx', 'v1')] })).toEqual([
      'packages.0.name: must be a Debian package name',
      'packages.0.version: must be an exact Debian version',
    ]);
    expect(problems({ files: [{ ...file('/etc/motd'), mode: '644' }], packages: [] })).toEqual(['files.0.mode: must be four octal digits such as "0644"']);
  });
});
