import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { writeJsonAtomic } from '#runtime';
import { RetectlConfig } from '#contracts';
import { cleartextRefusal } from '#tls';
import { RetectlError, usageError } from './errors.js';

export interface Connection {
  readonly url: string;
  /** Never printed or logged: error messages name where it came from, not what it is. */
  readonly token: string;
  /** CA certificates trusted instead of the system store, and where that was said (for messages). */
  readonly caFile?: string;
  readonly caFrom?: string;
}

export interface ConnectionFlags {
  readonly coordinator?: string;
  readonly token?: string;
  readonly cacert?: string;
  readonly insecureHttp?: boolean;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config');
  return join(base, 'florete', 'retectl.json');
}

export function readConfig(path = configPath()): RetectlConfig {
  let text: string;
  try {
    const st = statSync(path);
    // Like ssh: a token file others can read is a leaked token; refuse rather than use it.
    if ((st.mode & 0o077) !== 0) {
      throw new RetectlError('config', `${path} is readable by other users (mode ${(st.mode & 0o777).toString(8)}): run chmod 600 ${path}`);
    }
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    if (e instanceof RetectlError) throw e;
    throw new RetectlError('config', `cannot read ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new RetectlError('config', `${path} is not valid JSON`);
  }
  const parsed = RetectlConfig.safeParse(raw);
  if (!parsed.success)
    throw new RetectlError('config', `${path}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** Writes the config with mode 0600 in a 0700 folder; atomically, so a crash never leaves half a file. */
export function writeConfig(config: RetectlConfig, path = configPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeJsonAtomic(path, config, 0o600);
}

export function checkUrl(url: string, from: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw usageError(`${from} is not a URL: ${JSON.stringify(url)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw usageError(`${from} must be an http(s) URL, not ${u.protocol}`);
  return url.replace(/\/+$/, '');
}

/**
 * Flags beat the environment, the environment beats the config file; the rete's own mesh.coordinator
 * is the last resort for the URL (never for the token).
 */
export function resolveConnection(flags: ConnectionFlags, fallbackUrl?: string, env: NodeJS.ProcessEnv = process.env): Connection {
  // The file also says how to trust the coordinator: it is read unless the flags leave it nothing to say.
  const file = flags.coordinator && flags.token && (flags.cacert !== undefined || flags.insecureHttp) ? {} : readConfig(configPath(env));
  const url = coordinatorUrl(flags, file, fallbackUrl, env);
  const token = flags.token ?? (env.FLORETE_TOKEN || undefined) ?? file.token;
  if (!token) throw usageError('no API token: pass --token, set FLORETE_TOKEN or run `retectl config set token` (reads it from stdin)');
  // Before any connection: the token must not cross the network in clear.
  const refusal = cleartextRefusal(
    new URL(url),
    'API token',
    'pass --insecure-http (or run `retectl config set insecure_http true`)',
    flags.insecureHttp === true || file.insecure_http === true,
  );
  if (refusal) throw usageError(refusal);
  return { url, token, ...trustOf(flags, file, env) };
}

/**
 * The coordinator alone, for what anyone may read without a token (the repository's key): its URL
 * and how to trust it. No secret is sent, so plain http is not refused.
 */
export function resolvePublic(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): Omit<Connection, 'token'> {
  const file = flags.coordinator && flags.cacert !== undefined ? {} : readConfig(configPath(env));
  return { url: coordinatorUrl(flags, file, undefined, env), ...trustOf(flags, file, env) };
}

function trustOf(flags: ConnectionFlags, file: RetectlConfig, env: NodeJS.ProcessEnv): Pick<Connection, 'caFile' | 'caFrom'> {
  return flags.cacert !== undefined
    ? { caFile: resolve(flags.cacert), caFrom: '--cacert' }
    : file.ca_file !== undefined
      ? { caFile: file.ca_file, caFrom: `ca_file in ${configPath(env)}` }
      : {};
}

function coordinatorUrl(flags: ConnectionFlags, file: RetectlConfig, fallbackUrl: string | undefined, env: NodeJS.ProcessEnv): string {
  const url =
    flags.coordinator !== undefined
      ? checkUrl(flags.coordinator, '--coordinator')
      : env.FLORETE_COORDINATOR
        ? checkUrl(env.FLORETE_COORDINATOR, 'FLORETE_COORDINATOR')
        : file.coordinator
          ? checkUrl(file.coordinator, `coordinator in ${configPath(env)}`)
          : fallbackUrl
            ? checkUrl(fallbackUrl, 'mesh.coordinator')
            : undefined;
  if (!url) throw usageError('no coordinator URL: pass --coordinator, set FLORETE_COORDINATOR or run `retectl config set coordinator <url>`');
  return url;
}
