import { readFileSync } from 'node:fs';

/** The agent's systemd unit as shipped (scripts/package-agent.mjs copies it into the package). */
export const AGENT_UNIT = 'deploy/systemd/florete-agent.service';

/** The unit's `Key=value` settings, every value of a key repeated, comments and sections left out. */
export function unitSettings(text: string = readFileSync(AGENT_UNIT, 'utf8')): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) settings.set(m[1], [...(settings.get(m[1]) ?? []), m[2].trim()]);
  }
  return settings;
}

/**
 * Folders a process of the unit cannot read what the operator put there (systemd.exec(5)):
 * ProtectHome=true or tmpfs hides /home, /root and /run/user; PrivateTmp gives it its own empty
 * /tmp and /var/tmp; InaccessiblePaths hides what it names.
 */
export function unreadableFolders(settings: Map<string, string[]>): string[] {
  const last = (key: string) => settings.get(key)?.at(-1);
  const folders: string[] = [];
  if (['true', 'yes', 'tmpfs'].includes(last('ProtectHome') ?? '')) folders.push('/home', '/root', '/run/user');
  if (['true', 'yes'].includes(last('PrivateTmp') ?? '')) folders.push('/tmp', '/var/tmp');
  for (const v of settings.get('InaccessiblePaths') ?? [])
    folders.push(
      ...v
        .split(/\s+/)
        .map((p) => p.replace(/^-/, ''))
        .filter(Boolean),
    );
  return folders;
}

/** Folders the unit makes read-only for its processes: ProtectSystem (full: /usr, /boot, /efi, /etc; strict: everything) and ReadOnlyPaths. */
export function readOnlyFolders(settings: Map<string, string[]>): string[] {
  const protect = settings.get('ProtectSystem')?.at(-1);
  const folders: string[] = [];
  if (protect === 'strict') folders.push('/');
  else if (protect === 'full') folders.push('/usr', '/boot', '/efi', '/etc');
  else if (protect === 'true' || protect === 'yes') folders.push('/usr', '/boot', '/efi');
  for (const v of settings.get('ReadOnlyPaths') ?? [])
    folders.push(
      ...v
        .split(/\s+/)
        .map((p) => p.replace(/^-/, ''))
        .filter(Boolean),
    );
  return folders;
}

export const isUnder = (path: string, folder: string): boolean => folder === '/' || path === folder || path.startsWith(`${folder.replace(/\/$/, '')}/`);

/** The guides that walk through the first node. */
export const FIRST_NODE_GUIDES = ['docs/operator-guide.md', 'apps/flor/README.md'];

/** Every folder a guide gives `flor agent apply --set`, and every remote folder it copies a set to with scp. */
export function setFoldersIn(text: string): string[] {
  const applied = [...text.matchAll(/flor agent apply --set (\/[^\s`]+)/g)].map((m) => m[1]);
  const copied = [...text.matchAll(/scp -r \S+ \S+:(\/[^\s`]+)/g)].map((m) => m[1]);
  return [...applied, ...copied];
}
