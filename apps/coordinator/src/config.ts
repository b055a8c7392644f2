import { resolve } from 'node:path';
import { z } from 'zod';

const Env = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  FLORETE_DATA: z.string().default('./.florete'),
  DATABASE_URL: z.string().url().optional(),
  FLORETE_SIGNING_KEYS_FILE: z.string().optional(),
  FLORETE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  FLORETE_BODY_LIMIT: z.coerce.number().int().positive().default(16 * 1024 * 1024),
  FLORETE_BLOB_LIMIT: z.coerce.number().int().positive().default(4 * 1024 * 1024),
  FLORETE_ANON_RATE_LIMIT: z.coerce.number().int().min(0).default(120),
  FLORETE_DB_POOL: z.coerce.number().int().positive().default(10),
  FLORETE_CHECKPOINT_INTERVAL: z.coerce.number().int().positive().default(60),
  FLORETE_MIRROR: z.enum(['on', 'off']).default('on'),
  FLORETE_MIRROR_INTERVAL_MS: z.coerce.number().int().min(50).default(1000),
  FLORETE_MIRROR_PUSH_URL: z.string().url().optional(),
  FLORETE_MIRROR_PUSH_USERNAME: z.string().optional(),
  FLORETE_MIRROR_PUSH_PASSWORD: z.string().optional(),
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
  readonly dbPoolSize: number;
  /** Requests per address per anonymous route (enrol, JWKS, health) per minute; 0: no limit. */
  readonly anonymousRateLimit: number;
  readonly mirror: MirrorConfig;
  /** Seconds an idle ledger goes without a new signed checkpoint (appends sign one each). */
  readonly checkpointIntervalSeconds: number;
}

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
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    signingKeysFile: resolve(e.FLORETE_SIGNING_KEYS_FILE ?? `${dataDir}/keys/signing-keys.json`),
    logLevel: e.FLORETE_LOG_LEVEL,
    bodyLimit: e.FLORETE_BODY_LIMIT,
    blobLimit: e.FLORETE_BLOB_LIMIT,
    dbPoolSize: e.FLORETE_DB_POOL,
    anonymousRateLimit: e.FLORETE_ANON_RATE_LIMIT,
    checkpointIntervalSeconds: e.FLORETE_CHECKPOINT_INTERVAL,
    mirror: {
      enabled: e.FLORETE_MIRROR === 'on',
      gitdir: resolve(dataDir, 'audit.git'),
      intervalMs: e.FLORETE_MIRROR_INTERVAL_MS,
      ...(e.FLORETE_MIRROR_PUSH_URL
        ? { push: { url: e.FLORETE_MIRROR_PUSH_URL, username: e.FLORETE_MIRROR_PUSH_USERNAME, password: e.FLORETE_MIRROR_PUSH_PASSWORD } }
        : {}),
    },
  };
}
