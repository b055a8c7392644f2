import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

/** name → id from a passwd(5) or group(5) file: `name:x:id:…`, one entry a line. */
export function parseIdTable(text: string): Map<string, number> {
  const ids = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const [name, , id] = line.split(':');
    if (name && id !== undefined && /^[0-9]+$/.test(id) && !ids.has(name)) ids.set(name, Number(id));
  }
  return ids;
}

export interface UserDb {
  uid(name: string): number | undefined;
  gid(name: string): number | undefined;
}

/**
 * The host's user database: /etc/passwd and /etc/group first, then `getent` for names that live in
 * another NSS source (LDAP, systemd-userdb). Read afresh for each pass: a package may add users.
 */
export function systemUserDb(files = { passwd: '/etc/passwd', group: '/etc/group' }): UserDb {
  const table = (path: string) => {
    try {
      return parseIdTable(readFileSync(path, 'utf8'));
    } catch {
      return new Map<string, number>();
    }
  };
  const users = table(files.passwd);
  const groups = table(files.group);
  const getent = (db: 'passwd' | 'group', name: string): number | undefined => {
    try {
      return parseIdTable(execFileSync('getent', [db, name], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] })).get(name);
    } catch {
      return undefined;
    }
  };
  return {
    uid: (name) => users.get(name) ?? getent('passwd', name),
    gid: (name) => groups.get(name) ?? getent('group', name),
  };
}
