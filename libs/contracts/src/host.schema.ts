import { z } from 'zod';

/**
 * What a node's host is told to hold: absolute paths, file modes, user and group names, Debian
 * package names and versions. The predicates are shared: the rete schema wraps them with its stable
 * error codes, the resources.json contract (artifacts.schema.ts) with plain messages, so the operator's
 * CLI and the agent accept exactly the same values.
 */

/**
 * An absolute path in its one normal spelling: no empty, `.` or `..` segments, no trailing slash and no
 * control characters. With one spelling per path, "two resources on one path" is a string comparison.
 */
export function isHostPath(s: string): boolean {
  if (!s.startsWith('/') || s.length < 2 || s.length > 4096) return false;
  if (/[\u0000-\u001f\u007f]/.test(s)) return false;
  return s
    .slice(1)
    .split('/')
    .every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}
export const HostPath = z.string().refine(isHostPath, 'must be an absolute path without empty, "." or ".." segments or a trailing "/"');

/**
 * Where the agent keeps its own files on every host: its config and default install folder, and its
 * default state dir. A file resource in (or over) one of them would overwrite the agent itself.
 * apps/flor's DEFAULT_CONFIG_PATH, DEFAULT_INSTALL_DIR and DEFAULT_STATE_DIR lie under these.
 */
export const AGENT_HOST_PATHS = ['/etc/florete', '/var/lib/florete'] as const;

/** The agent's folder a path would write into or replace (an ancestor such as /etc), if any. */
export function agentPathAt(path: string): (typeof AGENT_HOST_PATHS)[number] | undefined {
  return AGENT_HOST_PATHS.find((p) => path === p || path.startsWith(`${p}/`) || p.startsWith(`${path}/`));
}

/** Permission bits in octal, with or without the leading digit for setuid, setgid and sticky. */
export const FILE_MODE = /^[0-7]{3,4}$/;
/** The one spelling a mode has in resources.json: four octal digits, e.g. "0644". */
export const CANONICAL_FILE_MODE = /^[0-7]{4}$/;
export const canonicalMode = (mode: string): string => mode.padStart(4, '0');

/** A user or group name as Debian's useradd accepts it by default (www-data, _apt, systemd-network). */
export const POSIX_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;
export const PosixName = z.string().regex(POSIX_NAME, 'must be a user or group name');

/**
 * Debian policy 5.6.1: lowercase letters, digits, "+", "-" and ".", at least two characters, starting
 * with a letter or digit.
 */
export const DEBIAN_PACKAGE_NAME = /^[a-z0-9][a-z0-9+.-]+$/;

/**
 * Debian policy 5.6.12: `[epoch:]upstream_version[-debian_revision]`. The epoch is a number; the
 * upstream version starts with a digit and holds letters, digits and `. + ~ -` (a hyphen only when a
 * revision follows, which splitting at the last hyphen gives for free); the revision holds letters,
 * digits and `. + ~`.
 */
export function isDebianVersion(s: string): boolean {
  const m = /^(?:([0-9]+):)?(.*)$/s.exec(s) as RegExpExecArray;
  if (m[1] !== undefined && m[1].length > 9) return false;
  const rest = m[2];
  const hyphen = rest.lastIndexOf('-');
  const upstream = hyphen < 0 ? rest : rest.slice(0, hyphen);
  const revision = hyphen < 0 ? undefined : rest.slice(hyphen + 1);
  if (!/^[0-9][A-Za-z0-9.+~-]*$/.test(upstream)) return false;
  return revision === undefined || /^[A-Za-z0-9.+~]+$/.test(revision);
}

/**
 * The package managers a resource may name, each with its own rules for names and versions. Adding a
 * manager is one entry here and one member of the resources.json union.
 */
export const PACKAGE_MANAGERS = {
  apt: {
    isName: (s: string) => DEBIAN_PACKAGE_NAME.test(s),
    isVersion: isDebianVersion,
    nameRule: 'must be a Debian package name: lowercase letters, digits, "+", "-" and ".", at least 2 characters, starting with a letter or digit',
    versionRule: 'must be an exact Debian version, [epoch:]upstream[-revision], with the upstream version starting with a digit (e.g. 1.22.1-9+deb12u11)',
  },
} as const satisfies Record<string, { isName(s: string): boolean; isVersion(s: string): boolean; nameRule: string; versionRule: string }>;
export type PackageManager = keyof typeof PACKAGE_MANAGERS;
export const PACKAGE_MANAGER_NAMES = Object.keys(PACKAGE_MANAGERS) as [PackageManager, ...PackageManager[]];
export const DEFAULT_PACKAGE_MANAGER: PackageManager = 'apt';
