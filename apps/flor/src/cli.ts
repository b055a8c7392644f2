import { Command } from 'commander';
import type * as enroll from './commands/enroll.command.js';
import type * as runCmd from './commands/run.command.js';
import type * as sync from './commands/sync.command.js';
import type * as status from './commands/status.command.js';
import type * as applySet from './commands/apply-set.command.js';
import type * as selfCheck from './commands/self-check.command.js';
import { AGENT_VERSION } from './version.js';

/** What each command resolves to: false means "ran, but the outcome is a failure" (exit 1). */
export type Outcome = boolean | void;

/** Declares the commands (loaded on use: `status` and `sync` start without the daemon's code); each action returns its command's outcome to main through `done`. */
export function buildCli(done: (outcome: Promise<Outcome>) => void): Command {
  const program = new Command('flor').description('Florete node agent').version(AGENT_VERSION).showHelpAfterError().exitOverride();
  const agent = program.command('agent').description('enrol this node, run the sync daemon, query it');
  const common = (c: Command) =>
    c
      .option('--state-dir <dir>', 'state dir (default $FLORETE_AGENT_STATE_DIR, the config state_dir, or /var/lib/florete/agent)')
      .option('--config <file>', 'local agent config (default $FLORETE_AGENT_CONFIG or /etc/florete/agent.yaml)');

  common(
    agent.command('enroll').alias('enrol').description("check the coordinator's TLS key and signing key against the token, enrol, store the identity (0600)"),
  )
    .requiredOption('--coordinator <url>', 'coordinator base URL')
    .requiredOption('--token <token>', 'enrolment token fle.<id>.<secret>.<thumbprint>[.<tls pin>]')
    .option('--node <name>', 'the node name this host expects to be (default: the one it was enrolled as); a mismatch makes the node ineligible')
    .option(
      '--cacert <file>',
      "CA certificates (PEM) to trust for the coordinator's certificate, instead of the system store; kept for later passes unless the config has tls.ca_file",
    )
    .option('--insecure-http', 'allow an http:// coordinator that is not on this machine: the token and later the node credential cross the network in clear')
    .action((opts: enroll.RunOptions) => done(import('./commands/enroll.command.js').then((m) => m.run(opts))));

  common(agent.command('run').description('the daemon: sync at start and every poll interval, serve the control socket')).action((opts: runCmd.RunOptions) =>
    done(import('./commands/run.command.js').then((m) => m.run(opts))),
  );

  common(agent.command('sync').description('ask the daemon for a sync pass now and print what happened'))
    .option('--dry-run', 'fetch and verify only; print the would-be version against the active one')
    .option('--json', 'print the outcome as JSON')
    .action((opts: sync.RunOptions) => done(import('./commands/sync.command.js').then((m) => m.run(opts))));

  common(agent.command('apply').description('apply a compiled node folder locally, before the node is enrolled (the first node of a mesh)'))
    .requiredOption('--set <dir>', 'the compiled node folder retectl writes: retectl compiled <node> --out <dir> (digests.json and the artifacts it lists)')
    .option('--node <name>', 'the node this host is to be: the set must be its set')
    .option('--json', 'print the outcome as JSON')
    .action((opts: applySet.RunOptions) => done(import('./commands/apply-set.command.js').then((m) => m.run(opts))));

  common(agent.command('status').description('lifecycle, versions, last and next poll, last error'))
    .option('--json', 'print the status as JSON')
    .option('--checkpoint', 'print the newest tree checkpoint this node verified, with its own cosignature: a signed note an auditor collects from the fleet')
    .action((opts: status.RunOptions) => done(import('./commands/status.command.js').then((m) => m.run(opts))));

  common(program.command('self-check').description('print the version, load the config and the state dir (writing nothing); exit 0 when both load'))
    .option('--json', 'print the outcome as JSON')
    .action((opts: selfCheck.RunOptions) => done(import('./commands/self-check.command.js').then((m) => m.run(opts))));

  return program;
}
