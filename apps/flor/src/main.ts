#!/usr/bin/env node
import { CommanderError } from 'commander';
import { buildCli, type Outcome } from './cli.js';
import { AgentError, UsageError } from './errors.js';

/** The only place that exits: 0 ok, 1 failure, 2 usage error (as every program of the project). */
function fail(err: unknown): never {
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  if (err instanceof UsageError) {
    process.stderr.write(`flor: ${err.message}\n`);
    process.exit(2);
  }
  if (err instanceof AgentError) {
    process.stderr.write(`flor: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`flor: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
}

let pending: Promise<Outcome> | undefined;
try {
  buildCli((p) => (pending = p)).parse(process.argv);
} catch (err) {
  fail(err);
}
if (pending) {
  pending.then((outcome) => process.exit(outcome === false ? 1 : 0), fail);
}
