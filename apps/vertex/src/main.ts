#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { join } from 'node:path';
import { FLOR_JSON, FlorJson, Version } from '#contracts';
import { VertexControlError } from '#vertex-control';
import { jsonLineLog } from '#runtime';
import { Vertex } from './vertex.js';

const log = jsonLineLog({ fields: { name: 'vertex', pid: process.pid } });

class StartError extends Error {}
class UsageError extends Error {}

function parseVersion(value: string): number {
  const v = Version.safeParse(Number(value));
  if (!/^[1-9][0-9]*$/.test(value) || !v.success) throw new InvalidArgumentError('must be a positive version number');
  return v.data;
}

function readConfig(path: string): FlorJson {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new StartError(`cannot read ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new StartError(`${path} is not JSON: ${(err as Error).message}`);
  }
  const parsed = FlorJson.safeParse(json);
  if (!parsed.success)
    throw new StartError(`${path} is not a valid flor.json: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

interface Options {
  config?: string;
  control: string;
  setVersion?: number;
  exitWithStdin?: boolean;
}

async function run(options: Options): Promise<void> {
  const activeDir = process.env.FLORETE_ACTIVE_DIR;
  const configPath = options.config ?? (activeDir ? join(activeDir, FLOR_JSON) : undefined);
  if (!configPath) throw new UsageError('--config is required when $FLORETE_ACTIVE_DIR is not set');
  const config = readConfig(configPath);
  const envVersion = process.env.FLORETE_SET_VERSION;
  const version = options.setVersion ?? (envVersion ? parseVersion(envVersion) : null);
  const vertex = await Vertex.start({ config, version, controlPath: options.control, log });
  const services = Object.fromEntries(config.services.filter((s) => s.protocol === 'tcp').map((s) => [s.name, s.port]));
  log('info', 'ready', { node: config.node, version, listen: config.listen, services, control: options.control });
  let stopping = false;
  const stop = (why: string): void => {
    if (stopping) return;
    stopping = true;
    log('info', 'stopping', { why });
    vertex.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // Under the agent's supervision stdin is a pipe from the agent: its end means the agent is gone.
  if (options.exitWithStdin) {
    process.stdin.on('end', () => stop('stdin closed'));
    process.stdin.resume();
  }
}

const program = new Command('vertex')
  .description('reference Florete vertex: serves the published TCP services, enforces ingress allow lists, hot-swaps them over a control socket')
  .option('--config <path>', 'flor.json to run (default: $FLORETE_ACTIVE_DIR/flor.json, as a supervising agent sets it)')
  .requiredOption('--control <path>', 'unix control socket to serve (mode 0600)')
  .option('--set-version <n>', 'version of the config (default: $FLORETE_SET_VERSION)', parseVersion)
  .option('--exit-with-stdin', 'exit when stdin ends (run by a supervising agent)')
  .exitOverride()
  .action((options: Options) => run(options));

/** The only place that exits: 0 ok, 1 failure, 2 usage error. */
program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  if (err instanceof UsageError) {
    process.stderr.write(`vertex: ${err.message}\n`);
    process.exit(2);
  }
  if (err instanceof StartError || err instanceof VertexControlError) {
    log('error', 'cannot start', { reason: err.message, code: err instanceof VertexControlError ? err.code : 'bad_config' });
    process.stderr.write(`vertex: ${err.message}\n`);
    process.exit(1);
  }
  const e = err as NodeJS.ErrnoException;
  log('error', 'cannot start', { reason: e?.message ?? String(err), code: e?.code });
  process.stderr.write(`vertex: ${e?.stack ?? String(err)}\n`);
  process.exit(1);
});
