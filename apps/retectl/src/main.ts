#!/usr/bin/env node
// retectl, the operator's CLI. The only place that exits: usage errors 2, failures 1, plan changes 3, publish --wait timed out 4.
import { CommanderError } from 'commander';
import { buildCli } from './cli.js';
import { RetectlError } from './errors.js';

const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** retectl is built and tested on Node.js 22.12 and later (commander 15 needs it): an older line is refused before anything runs. */
function unsupportedNode(): string | undefined {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major > 22 || (major === 22 && minor >= 12)) return undefined;
  return `needs Node.js 22.12 or later; this is ${process.version} (${process.execPath})`;
}

async function main(argv: readonly string[]): Promise<number> {
  const unsupported = unsupportedNode();
  if (unsupported) {
    process.stderr.write(`retectl: ${unsupported}\n`);
    return EXIT_FAILURE;
  }
  const { program, status } = buildCli();
  try {
    await program.parseAsync(argv as string[]);
    return status();
  } catch (e) {
    // Commander has already printed its one line (or the help text).
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : EXIT_USAGE;
    if (e instanceof RetectlError) {
      process.stderr.write(`retectl: ${e.message}\n`);
      return e.code === 'usage' ? EXIT_USAGE : EXIT_FAILURE;
    }
    // A bug, not bad input: still one line; the stack only on request.
    process.stderr.write(`retectl: internal error: ${(e as Error)?.message ?? String(e)}\n`);
    if (process.env.RETECTL_DEBUG) process.stderr.write(`${(e as Error)?.stack ?? ''}\n`);
    return EXIT_FAILURE;
  }
}

// `retectl history alpha | head` closes the pipe early: that is the reader's choice, not a failure, so
// stop at once, keeping a status already decided. Exit only once stderr has drained: notes and
// diagnostics already written must still reach their reader.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  const code = e.code === 'EPIPE' ? (process.exitCode ?? 0) : EXIT_FAILURE;
  process.stderr.write('', () => process.exit(code));
});

// No process.exit here: when stdout or stderr is a socket or a slow pipe, writes are still queued, and
// exiting would drop them. The process ends by itself once they have drained.
process.exitCode = await main(process.argv);
