import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { MAX_API_TOKEN_TTL, MIN_API_TOKEN_TTL, parseDuration } from '#contracts';

/** Where `npm run build` puts the web console: dist/console, beside dist/apps. */
const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../../console', import.meta.url));

const Env = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  FLORETE_DATA: z.string().default('./.florete'),
  DATABASE_URL: z.string().url().optional(),
  FLORETE_SIGNING_KEYS_FILE: z.string().optional(),
  FLORETE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  FLORETE_BODY_LIMIT: z.coerce
    .number()
    .int()
    .positive()
    .default(16 * 1024 * 1024),
  FLORETE_BLOB_LIMIT: z.coerce
    .number()
    .int()
    .positive()
    .default(4 * 1024 * 1024),
  FLORETE_ARCHIVE_LIMIT: z.coerce
    .number()
    .int()
    .positive()
    .max(4 * 1024 * 1024 * 1024)
    .default(256 * 1024 * 1024),
  FLORETE_PACKAGE_LIMIT: z.coerce
    .number()
    .int()
    .positive()
    .max(1024 * 1024 * 1024)
    .default(64 * 1024 * 1024),
  FLORETE_REPO_KEY_FILE: z.string().optional(),
  FLORETE_CONSOLE_DIR: z.string().optional(),
  FLORETE_ANON_RATE_LIMIT: z.coerce.number().int().min(0).default(120),
  FLORETE_DB_POOL: z.coerce.number().int().positive().default(10),
  FLORETE_CHECKPOINT_INTERVAL: z.coerce.number().int().positive().default(60),
  FLORETE_CONTACT_FLUSH_MS: z.coerce.number().int().min(50).default(5000),
  FLORETE_API_TOKEN_TTL: z.string().default('90d'),
  FLORETE_ROLLOUT_TICK_MS: z.coerce.number().int().min(50).default(1000),
  FLORETE_ROLLOUT_CONFIRM_GRACE: z.coerce
    .number()
    .int()
    .min(0)
    .max(24 * 3600)
    .default(60),
  FLORETE_WATCH_MAX_WAIT: z.coerce.number().int().min(0).max(3600).default(300),
  FLORETE_WATCH_LIMIT: z.coerce.number().int().min(0).default(20_000),
  FLORETE_MIRROR: z.enum(['on', 'off']).default('on'),
  FLORETE_MIRROR_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
  FLORETE_MIRROR_PUSH_URL: z.string().url().optional(),
  FLORETE_MIRROR_PUSH_USERNAME: z.string().optional(),
  FLORETE_MIRROR_PUSH_PASSWORD: z.string().optional(),
  FLORETE_TLS_CERT: z.string().optional(),
  FLORETE_TLS_KEY: z.string().optional(),
  FLORETE_TLS: z.enum(['proxy']).optional(),
  FLORETE_TRUSTED_PROXIES: z.string().optional(),
});

/** Every variable the coordinator reads; all are optional. */
export const ENV_VARIABLES: readonly string[] = Object.keys(Env.shape);

export interface CoordinatorConfig {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly databaseUrl?: string;
  readonly signingKeysFile: string;
  readonly logLevel: string;
  readonly bodyLimit: number;
  readonly blobLimit: number;
  /** Largest .deb `retectl package push` uploads. */
  readonly packageLimit: number;
  /** Largest blob archive (many blobs in one tar upload). */
  readonly archiveLimit: number;
  /** The armored OpenPGP private key that signs the apt repository (0600). */
  readonly repoKeyFile: string;
  readonly dbPoolSize: number;
  /** Requests per address per anonymous route (enrol, JWKS, health) per minute; 0: no limit. */
  readonly anonymousRateLimit: number;
  readonly mirror: MirrorConfig;
  readonly tls: TlsConfig;
  /** Seconds an idle ledger goes without a new signed checkpoint (appends sign one each). */
  readonly checkpointIntervalSeconds: number;
  /** The built web console, served at /ui. */
  readonly consoleDir: string;
  /** How often the last contacts that polls noted in memory, and the API tokens' last uses, are written, each in one statement. */
  readonly contactFlushMs: number;
  /** The life of an API token created without --ttl or --no-expiry, in seconds; null: such tokens never expire. */
  readonly apiTokenTtlSeconds: number | null;
  /** How often each replica's rollout driver looks at the running rollouts' gates. */
  readonly rolloutTickMs: number;
  /**
   * Seconds past a released node's confirmation window before the coordinator gives it its previous
   * set back unconfirmed: room for the agent's own revert and its report to arrive first.
   */
  readonly rolloutConfirmGraceSeconds: number;
  readonly watch: WatchConfig;
}

export interface WatchConfig {
  /** The longest a bundle watch (Prefer: wait) is held, in seconds; 0 turns watching off (every poll is answered at once). */
  readonly maxWaitSeconds: number;
  /** The most watches one replica holds at once; beyond it a watch is answered 503 with Retry-After. */
  readonly limit: number;
}

export interface TlsConfig {
  /** The certificate (PEM, leaf first, then any intermediates) and its key: the coordinator serves HTTPS. */
  readonly certFile?: string;
  readonly keyFile?: string;
  /** FLORETE_TLS=proxy: a TLS-terminating proxy stands in front; plain HTTP behind it is allowed anywhere. */
  readonly proxy: boolean;
  /** Addresses or CIDRs whose X-Forwarded-For is believed (the proxy's); empty unless proxy. */
  readonly trustedProxies: readonly string[];
}

/** When FLORETE_TLS=proxy names no proxy: one on this machine. */
const LOOPBACK_PROXIES = ['127.0.0.1/8', '::1/128'];

export interface MirrorConfig {
  readonly enabled: boolean;
  /** The bare audit repository: <dataDir>/audit.git. */
  readonly gitdir: string;
  readonly intervalMs: number;
  readonly push?: { readonly url: string; readonly username?: string; readonly password?: string };
}

export const COORDINATOR_CONFIG = Symbol('COORDINATOR_CONFIG');

/**
 * Parses the environment once at start; a bad value stops the process with the variable's name. An
 * empty variable is unset, as `DATABASE_URL=` in a shell or `${DATABASE_URL}` in a compose file mean
 * it: the default applies, instead of "Invalid URL" or, for PORT, a random port.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): CoordinatorConfig {
  const set = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = Env.safeParse(set);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid environment: ${lines.join('; ')}`);
  }
  const e = parsed.data;
  const dataDir = resolve(e.FLORETE_DATA);
  const tls = tlsConfig(e);
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    signingKeysFile: resolve(e.FLORETE_SIGNING_KEYS_FILE ?? `${dataDir}/keys/signing-keys.json`),
    logLevel: e.FLORETE_LOG_LEVEL,
    bodyLimit: e.FLORETE_BODY_LIMIT,
    blobLimit: e.FLORETE_BLOB_LIMIT,
    packageLimit: e.FLORETE_PACKAGE_LIMIT,
    archiveLimit: e.FLORETE_ARCHIVE_LIMIT,
    repoKeyFile: resolve(e.FLORETE_REPO_KEY_FILE ?? `${dataDir}/keys/repo-signing-key.asc`),
    dbPoolSize: e.FLORETE_DB_POOL,
    anonymousRateLimit: e.FLORETE_ANON_RATE_LIMIT,
    checkpointIntervalSeconds: e.FLORETE_CHECKPOINT_INTERVAL,
    contactFlushMs: e.FLORETE_CONTACT_FLUSH_MS,
    apiTokenTtlSeconds: parseApiTokenTtl(e.FLORETE_API_TOKEN_TTL),
    rolloutTickMs: e.FLORETE_ROLLOUT_TICK_MS,
    rolloutConfirmGraceSeconds: e.FLORETE_ROLLOUT_CONFIRM_GRACE,
    watch: { maxWaitSeconds: e.FLORETE_WATCH_MAX_WAIT, limit: e.FLORETE_WATCH_LIMIT },
    consoleDir: e.FLORETE_CONSOLE_DIR ? resolve(e.FLORETE_CONSOLE_DIR) : DEFAULT_CONSOLE_DIR,
    mirror: {
      enabled: e.FLORETE_MIRROR === 'on',
      gitdir: resolve(dataDir, 'audit.git'),
      intervalMs: e.FLORETE_MIRROR_INTERVAL_MS,
      ...(e.FLORETE_MIRROR_PUSH_URL
        ? { push: { url: e.FLORETE_MIRROR_PUSH_URL, username: e.FLORETE_MIRROR_PUSH_USERNAME, password: e.FLORETE_MIRROR_PUSH_PASSWORD } }
        : {}),
    },
    tls,
  };
}

function tlsConfig(e: z.infer<typeof Env>): TlsConfig {
  const fail = (message: string) => new Error(`invalid environment: ${message}`);
  if ((e.FLORETE_TLS_CERT === undefined) !== (e.FLORETE_TLS_KEY === undefined)) {
    throw fail(
      `${e.FLORETE_TLS_CERT === undefined ? 'FLORETE_TLS_KEY' : 'FLORETE_TLS_CERT'} is set without ${e.FLORETE_TLS_CERT === undefined ? 'FLORETE_TLS_CERT' : 'FLORETE_TLS_KEY'}: give both the certificate and its key (PEM files)`,
    );
  }
  const proxy = e.FLORETE_TLS === 'proxy';
  if (e.FLORETE_TRUSTED_PROXIES !== undefined && !proxy)
    throw fail('FLORETE_TRUSTED_PROXIES is set without FLORETE_TLS=proxy: X-Forwarded-For is believed only behind a proxy');
  const trustedProxies = proxy ? (e.FLORETE_TRUSTED_PROXIES === undefined ? LOOPBACK_PROXIES : parseProxies(e.FLORETE_TRUSTED_PROXIES)) : [];
  return {
    ...(e.FLORETE_TLS_CERT !== undefined ? { certFile: resolve(e.FLORETE_TLS_CERT), keyFile: resolve(e.FLORETE_TLS_KEY!) } : {}),
    proxy,
    trustedProxies,
  };
}

/** A comma list of addresses and CIDRs (10.0.0.5, 10.0.0.0/24, fd00::/64); anything else names itself. */
export function parseProxies(text: string): string[] {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (items.length === 0) throw new Error('invalid environment: FLORETE_TRUSTED_PROXIES: give the proxy addresses or CIDRs, comma separated');
  for (const item of items) {
    const [address, prefix, extra] = item.split('/');
    const family = isIP(address);
    const max = family === 6 ? 128 : 32;
    const badPrefix = prefix !== undefined && (!/^[0-9]{1,3}$/.test(prefix) || Number(prefix) > max);
    if (family === 0 || badPrefix || extra !== undefined) {
      throw new Error(
        `invalid environment: FLORETE_TRUSTED_PROXIES: ${JSON.stringify(item)} is not an IP address or CIDR (such as 10.0.0.5, 10.0.0.0/24 or fd00::/64)`,
      );
    }
  }
  return items;
}

/** FLORETE_API_TOKEN_TTL: a duration as the rete writes them (1m to 366d), or `none`. */
export function parseApiTokenTtl(text: string): number | null {
  const value = text.trim();
  if (value.toLowerCase() === 'none') return null;
  const fail = (why: string) => new Error(`invalid environment: FLORETE_API_TOKEN_TTL: ${why}`);
  if (/^[0-9]+$/.test(value)) throw fail(`${value} has no unit: write ${value}s, or a duration such as 90d`);
  const seconds = parseDuration(value);
  if (seconds === undefined) throw fail(`${JSON.stringify(value)} is not a duration such as 12h, 30d or 90d, nor none`);
  if (seconds < MIN_API_TOKEN_TTL || seconds > MAX_API_TOKEN_TTL) throw fail(`${value} is outside 1m to 366d; none gives tokens made without --ttl no expiry`);
  return seconds;
}
