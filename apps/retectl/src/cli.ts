import { isAbsolute, join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { DNS_LABEL, MAX_CONFIRM_WITHIN, MIN_CONFIRM_WITHIN, parseDuration, ROLES } from '#contracts/plain';
import { bashCompletion, completionTable, fishCompletion, nodeCommands, zshCompletion } from './completion.js';
import { usageError } from './errors.js';
import { setVerbose } from './output.js';

export const VERSION = '0.1.0';

/**
 * Each command's module, loaded when its command runs: retectl starts by loading what one command
 * needs, not what every command does (HTTP client, ledger and audit code for a compile).
 */
const compile = () => import('./commands/compile.js');
const compiled = () => import('./commands/compiled.js');
const configSet = () => import('./commands/config-set.js');
const configShow = () => import('./commands/config-show.js');
const configUnset = () => import('./commands/config-unset.js');
const diff = () => import('./commands/diff.js');
const history = () => import('./commands/history.js');
const init = () => import('./commands/init.js');
const keysList = () => import('./commands/keys-list.js');
const keysRotate = () => import('./commands/keys-rotate.js');
const keysRevoke = () => import('./commands/keys-revoke.js');
const ledgerVerify = () => import('./commands/ledger-verify.js');
const auditCheckpoint = () => import('./commands/audit-checkpoint.js');
const auditVerify = () => import('./commands/audit-verify.js');
const auditWitnesses = () => import('./commands/audit-witnesses.js');
const auditTree = () => import('./commands/audit-tree.js');
const auditCosigners = () => import('./commands/audit-cosigners.js');
const pkg = () => import('./commands/package.js');
const plan = () => import('./commands/plan.js');
const publish = () => import('./commands/publish.js');
const retire = () => import('./commands/retire.js');
const rollout = () => import('./commands/rollout.js');
const confirm = () => import('./commands/confirm.js');
const rollback = () => import('./commands/rollback.js');
const show = () => import('./commands/show.js');
const status = () => import('./commands/status.js');
const tokenCreate = () => import('./commands/token-create.js');
const tokenList = () => import('./commands/token-list.js');
const tokenRevoke = () => import('./commands/token-revoke.js');
const whoami = () => import('./commands/whoami.js');
const validate = () => import('./commands/validate.js');

const integer =
  (what: string, min: number) =>
  (value: string): number => {
    if (!/^[0-9]{1,15}$/.test(value) || Number(value) < min) throw new InvalidArgumentError(`${what} must be a whole number ≥ ${min}`);
    return Number(value);
  };
const waitTimeout = (value: string): number => {
  const seconds = parseDuration(value);
  if (seconds === undefined) throw new InvalidArgumentError('must be a duration such as 30s, 5m or 1h');
  return seconds;
};
const confirmWindow = (value: string): number => {
  const seconds = parseDuration(value);
  if (seconds === undefined || seconds < MIN_CONFIRM_WITHIN || seconds > MAX_CONFIRM_WITHIN)
    throw new InvalidArgumentError('expected a duration from 10s to 7d, such as 10m');
  return seconds;
};
const age = (value: string): number => {
  if (/^[0-9]+$/.test(value)) throw new InvalidArgumentError(`${value} has no unit: write ${value}s, or a duration such as 1h`);
  const seconds = parseDuration(value);
  if (seconds === undefined) throw new InvalidArgumentError('must be a duration such as 90s, 15m, 1h or 2d');
  return seconds;
};
const role = (value: string): (typeof ROLES)[number] => {
  const known = ROLES.find((r) => r === value);
  if (known === undefined) throw new InvalidArgumentError('must be reader, publisher or admin');
  return known;
};
/** `--allow-ineligible alpha,beta`, repeatable: every name a node name, in the order given. */
function nodeList(value: string, previous: readonly string[] = []): string[] {
  const names = value.split(',').map((n) => n.trim());
  const bad = names.find((n) => !DNS_LABEL.test(n));
  if (bad !== undefined)
    throw new InvalidArgumentError(bad === '' ? 'names an empty node: give node names separated by commas' : `${JSON.stringify(bad)} is not a node name`);
  return [...previous, ...names];
}
/** `--wait` without a value. */
const DEFAULT_WAIT_SECONDS = 300;
const ttl = (value: string): number => {
  // A bare number would have to guess its unit; the rete never does, so neither does the CLI.
  if (/^[0-9]+$/.test(value)) throw new InvalidArgumentError(`${value} has no unit: write ${value}s, or a duration such as 1h`);
  const seconds = parseDuration(value);
  if (seconds === undefined) throw new InvalidArgumentError('must be a duration such as 90s, 10m, 1h, 1h30m or 7d');
  // The upper bound depends on the kind of token (token-create.ts).
  if (seconds < 60) throw new InvalidArgumentError('must be between 1m and 30d (an API token: 366d)');
  return seconds;
};

/**
 * Declares every command and nothing else: each action hands its options to a command's run(),
 * which returns an exit status or throws. `status()` is the status of the last action run.
 */
export function buildCli(): { program: Command; status: () => number } {
  let exitStatus = 0;
  const done = (code: number | void) => {
    exitStatus = code ?? 0;
  };
  const program = new Command('retectl')
    .description("the Florete operator's CLI: validate, compile, plan and publish a rete, then inspect and roll back")
    .version(VERSION)
    // Program options only before the command name, so `show --version N` means the node's version.
    .enablePositionalOptions()
    .option(
      '-C, --dir <dir>',
      'the rete directory for init, validate, compile, plan and publish, as with git -C (a relative -C after the command is taken inside it)',
    )
    .exitOverride()
    // The command's own --verbose (every command that talks to a coordinator has one), before its action runs.
    .hook('preAction', (_program, action) => setVerbose((action.opts() as { verbose?: boolean }).verbose === true))
    .configureOutput({ outputError: (text, write) => write(`retectl: ${text.replace(/^error: /, '')}`) });

  /** The rete directory: a -C after the command inside the one before it, as git does; an absolute one alone. */
  const reteDir = (inner: string): string => {
    const outer = (program.opts() as { dir?: string }).dir;
    return outer === undefined || isAbsolute(inner) ? inner : join(outer, inner);
  };
  const json = (c: Command) => c.option('--json', 'print machine-readable JSON on stdout');
  /** Each overrides its field of the rete's rollout block; plan takes them to show the plan a publish with them would use. */
  const rolloutFlags = (c: Command) =>
    c
      .option('--canary <selector>', 'roll out in waves, first to these nodes: tag:NAMES, group:NAMES or node names (a comma list)')
      .option('--waves <percents>', 'roll out in waves after the canary: cumulative shares of the remaining nodes, e.g. 10,50,100')
      .option('--bake <duration>', 'in a rollout, how long each wave runs confirmed before the next is released (e.g. 5m)')
      .option(
        '--failure-budget <n|share>',
        'in a rollout, how many nodes of a wave (2) or what share (5%) may fail, revert or reject before it halts (default 0)',
      )
      .option('--confirm-share <share>', 'in a rollout, the share of a wave that must confirm before the next is released (default 100%)')
      .option('--on-halt <rollback|hold>', 'in a rollout, what a halt does to the released nodes (default rollback)')
      .option('--no-rollout', "every changed node at once, setting aside the rete's rollout block (a --prune needs it)");
  const dir = (c: Command) => c.option('-C, --dir <dir>', 'the rete directory', '.');
  const remote = (c: Command) =>
    c
      .option('--coordinator <url>', "coordinator URL (else $FLORETE_COORDINATOR, the config file, the rete's mesh.coordinator)")
      .option('--token <token>', 'API token (else $FLORETE_TOKEN, then the config file)')
      .option(
        '--cacert <file>',
        "CA certificates (PEM) to trust for the coordinator's certificate instead of the system store (else ca_file in the config file)",
      )
      .option('--insecure-http', 'allow an http:// coordinator that is not on this machine: the API token crosses the network in clear')
      .option('-v, --verbose', 'on stderr, each request to the coordinator with its status, bytes and milliseconds (never the token), and where the time went');

  json(
    program
      .command('init')
      .argument('[dir]', 'where to write the example', '.')
      .description('write an example rete (3 nodes, a group, a service, an ACL rule)'),
  ).action(async (d: string, o) => done(await (await init()).run({ ...o, dir: reteDir(d) })));
  json(dir(program.command('validate').description('check the rete and report every error as file:line:col: path: message'))).action(async (o) =>
    done(await (await validate()).run({ ...o, dir: reteDir(o.dir) })),
  );
  json(
    dir(
      program
        .command('compile')
        .description(
          "validate, then write each node's agent.json and flor.json (and resources.json with file contents for nodes with resources) and its digest list into .flor/compiled; retectl compiled <node> shows them",
        )
        .option('--all', 'list every node that changed (else the first 20, then the summary)'),
    ),
  ).action(async (o) => done(await (await compile()).run({ ...o, dir: reteDir(o.dir) })));
  json(
    dir(
      program
        .command('compiled')
        .argument('<node>')
        .argument('[artifact]', "print this artifact's exact bytes alone (flor.json, agent.json, file-<sha256>, …)")
        .description(
          "a node's compiled set, as a publish would send it: every artifact with its size and sha256, or written as a folder for flor agent apply --set",
        )
        .option('--out <dir>', "write the node's folder there (its artifacts beside digests.json): a new or empty folder"),
    ),
  ).action(async (node: string, artifact: string | undefined, o) =>
    done(await (await compiled()).run({ ...o, node, ...(artifact !== undefined ? { artifact } : {}), dir: reteDir(o.dir) })),
  );
  rolloutFlags(
    json(
      remote(
        dir(
          program
            .command('plan')
            .argument('[nodes...]', 'with --diff: the nodes to show (default: those that change)')
            .description('compare the compiled tree with the coordinator (exit 3 when a publish would change something)'),
        ),
      ),
    )
      .option('--prune', 'also plan to retire nodes no longer in the tree')
      .option('--all', 'list every node, unchanged ones too (else the summary and the first 20 nodes that change)')
      .option('--diff', "show each changing node's content change against its head: unified diffs, host resources first")
      .option('--no-color', 'no colour in --diff, even on a terminal (as NO_COLOR=1)'),
  ).action(async (nodes: string[], o) => done(await (await plan()).run({ ...o, nodes, dir: reteDir(o.dir) })));
  rolloutFlags(
    json(remote(dir(program.command('publish').description('upload missing blobs and publish the compiled tree'))))
      .option('-m, --message <message>', 'why: recorded in the ledger and the audit mirror')
      .option('--prune', 'retire nodes no longer in the tree')
      .option('--expect-position <n>', 'refuse if the ledger moved past this position', integer('--expect-position', 0))
      .option(
        '--wait [timeout]',
        `wait until no touched node is outstanding (default ${DEFAULT_WAIT_SECONDS / 60}m): exit 0 all applied, 1 any failed, 4 timed out`,
        waitTimeout,
      )
      .option(
        '--allow-ineligible <nodes>',
        'give these ineligible nodes (a failed enrolment briefing line) new content anyway, recorded in the ledger: a comma list, repeatable',
        nodeList,
      )
      .option('--all', 'list every changed node (else the summary and the first 20), and after --wait every node of the publish')
      .option('--full', 'send every node for the coordinator to compare, not only those whose digests differ from their heads'),
  )
    .option('--supersede <rollout>', 'replace this running rollout: needed when the publish changes any of its nodes')
    .option(
      '--confirm-within <duration>',
      'the changed nodes revert on their own unless retectl confirm <publish> comes within this long of their taking it (10s to 7d)',
      confirmWindow,
    )
    .action(async (o) =>
      done(
        await (
          await publish()
        ).run({
          ...o,
          confirmWithin: o.confirmWithin,
          dir: reteDir(o.dir),
          waitSeconds: o.wait === undefined ? undefined : o.wait === true ? DEFAULT_WAIT_SECONDS : o.wait,
        }),
      ),
    );
  json(
    remote(
      program
        .command('status')
        .argument('[node]', 'one node in detail, with what its agent last did to each host resource')
        .description('nodes with head and applied versions, credential, last contact, lifecycle state and convergence'),
    ),
  )
    .option('--publish <id>', "a publish's outcome per node: applied, outstanding, failed (with the reason) or superseded")
    .option('--state <state>', 'only nodes in this lifecycle state (unmanaged, enrolled, retired) or convergence (converged, outstanding, failed)')
    .option('--credential <state>', 'only nodes whose credential is none, pending (a token is out), live or revoked')
    .option(
      '--contact-older-than <duration>',
      'only nodes whose last contact is older than this (a duration such as 15m, 1h or 2d), or that never made contact',
      age,
    )
    .action(async (node: string | undefined, o) => done(await (await status()).run({ ...o, node })));
  json(remote(program.command('history').argument('<node>').description("a node's versions, newest first")))
    .option('--limit <n>', 'at most this many versions', integer('--limit', 1), 100)
    .action(async (node: string, o) => done(await (await history()).run({ ...o, node })));
  json(remote(program.command('show').argument('<node>').description("a node's artifacts at its head or at --version")))
    .option('--version <n>', 'the version to show', integer('--version', 1))
    .action(async (node: string, o) => done(await (await show()).run({ ...o, node })));
  json(
    remote(
      program
        .command('diff')
        .argument('<node>')
        .argument('<from>', 'older version (0: nothing)', integer('<from>', 0))
        .argument('<to>', 'newer version', integer('<to>', 1)),
    ),
  )
    .description('unified diff of a node between two versions, host resource changes first')
    .option('--no-color', 'no colour, even on a terminal (as NO_COLOR=1)')
    .action(async (node: string, from: number, to: number, o) => done(await (await diff()).run({ ...o, node, from, to })));
  json(remote(program.command('rollback').argument('<node>').description("stamp a new version with an older version's content")))
    .requiredOption('--to <n>', 'the version whose content to restore', integer('--to', 1))
    .option('-m, --message <message>', 'why')
    .option('--allow-ineligible', 'roll back even if the node is ineligible (a failed enrolment briefing line), recorded in the ledger')
    .action(async (node: string, o) => done(await (await rollback()).run({ ...o, node })));
  json(remote(program.command('retire').argument('<node>').description("stamp a node's final, empty version")))
    .option('-m, --message <message>', 'why')
    .option('--lost', 'the node is gone for good and will never apply it: revoke its credential now, with the retirement (admin)')
    .action(async (node: string, o) => done(await (await retire()).run({ ...o, node })));

  json(
    remote(
      program
        .command('confirm')
        .argument('<publish>', 'the publish id (a wave of a rollout is a publish of its own)')
        .description('confirm a publish made with --confirm-within: its nodes keep it instead of reverting'),
    ),
  ).action(async (publishId: string, o) => done(await (await confirm()).run({ ...o, publish: publishId })));
  const rollouts = program.command('rollout').description('publishes released in waves: follow, pause, resume, promote or abort one');
  json(remote(rollouts.command('list').description('rollouts, newest first')))
    .option('--status <status>', 'only rollouts in this state: running, paused, halted, aborted, completed or superseded')
    .action(async (o) => done(await (await rollout()).list(o)));
  json(
    remote(
      rollouts
        .command('status')
        .argument('[id]', 'the rollout (default: the newest running or paused one)')
        .description("a rollout's waves, what their nodes reported, and its timeline"),
    ),
  )
    .option('--watch', 'print a line at each change until the rollout finishes: exit 0 completed, 1 halted or aborted, 4 timed out')
    .option('--timeout <duration>', 'with --watch, how long to wait (default 1h)', waitTimeout)
    .action(async (id: string | undefined, o) => done(await (await rollout()).status({ ...o, id, timeoutSeconds: o.timeout })));
  for (const [action, what] of [
    ['pause', 'stop releasing waves; released nodes keep what they have'],
    ['resume', 'let a paused rollout release waves again'],
    ['promote', 'release the next wave now, whatever its gate says'],
    ['abort', 'halt the rollout and give every released node its previous content back'],
  ] as const) {
    json(remote(rollouts.command(action).argument('<id>', 'the rollout (its id, or 8 characters or more of it)').description(what)))
      .option('-m, --message <message>', 'why: recorded in the ledger with who')
      .action(async (id: string, o) => done(await (await rollout()).act({ ...o, id, action })));
  }

  const token = program.command('token').description('enrolment tokens for new nodes, API tokens for people and scripts');
  json(
    remote(
      token
        .command('create')
        .argument('[node]', 'the node an enrolment token is for')
        .description('create a single-use enrolment token for a node, or with --role and --name an API token (printed once)'),
    ),
  )
    .option('--role <role>', 'create an API token with this role instead: reader, publisher or admin', role)
    .option('--name <name>', "the API token's holder, recorded as the actor of what it does")
    .option(
      '--ttl <duration>',
      "how long the token stays valid: a duration such as 90s, 10m, 1h, 1h30m or 7d; an enrolment token 1m to 30d (default: 1h), an API token 1m to 366d (default: the coordinator's, FLORETE_API_TOKEN_TTL)",
      ttl,
    )
    .option('--no-expiry', 'an API token that never expires, listed as such')
    .option(
      '--scope <selector>',
      'hold a publisher or reader token to these nodes, written as an ACL source of the rete: a node name, tag:<name> or group:<name>; repeat it or separate with commas for more',
      (v: string, prev: string[] = []) => [...prev, ...v.split(',')],
    )
    .action(async (node: string | undefined, o) => done(await (await tokenCreate()).run({ ...o, node, ttlSeconds: o.ttl })));
  json(
    remote(
      token.command('list').description('every API token (admin): name, id, role, scope, state, who created it and when, expiry, last use; never a secret'),
    ),
  ).action(async (o) => done(await (await tokenList()).run(o)));
  json(
    remote(
      token
        .command('revoke')
        .argument('<token>', 'its name or its id (the id when several tokens share the name)')
        .description('revoke an API token (admin): refused from now on on every replica, recorded in the ledger'),
    ),
  ).action(async (ref: string, o) => done(await (await tokenRevoke()).run({ ...o, ref })));
  json(remote(program.command('whoami').description('the API token in use: its name, role, scope, what it may do, and when it expires'))).action(async (o) =>
    done(await (await whoami()).run(o)),
  );

  const keys = program.command('keys').description("the coordinator's bundle signing keys");
  json(
    keys
      .command('list')
      .description(
        "every signing key of the coordinator's trust chain: active, retired or revoked, and the trust version and time of each step; no token is needed",
      ),
  )
    .option('--coordinator <url>', 'coordinator URL (else $FLORETE_COORDINATOR, then the config file)')
    .option('--cacert <file>', "CA certificates (PEM) to trust for the coordinator's certificate instead of the system store (else ca_file in the config file)")
    .action(async (o) => done(await (await keysList()).run(o)));
  json(
    remote(keys.command('rotate').description('rotate the signing key (admin): a new trust version, every node head moved to the new key; prints the new kid')),
  ).action(async (o) => done(await (await keysRotate()).run(o)));
  json(
    remote(
      keys
        .command('revoke')
        .argument('<kid>', 'the key to revoke')
        .description('revoke a signing key (admin): agents refuse anything it signs; revoking the signer also rotates'),
    ),
  ).action(async (kid: string, o) => done(await (await keysRevoke()).run({ ...o, kid })));

  const pkgs = program.command('package').description("the mesh's apt repository, served by the coordinator at /repo/debian/");
  json(
    remote(
      pkgs
        .command('push')
        .argument('<file.deb>', 'the package to upload')
        .description('upload a .deb (publisher); its name, version and architecture come from the package, and the ledger records who pushed it'),
    ),
  ).action(async (file: string, o) => done(await (await pkg()).push({ ...o, file })));
  json(remote(pkgs.command('list').description('the packages in the repository, in push order, with who pushed each'))).action(async (o) =>
    done(await (await pkg()).list(o)),
  );
  pkgs
    .command('key')
    .description("print the repository's signing key for apt's signed-by= (binary; redirect it to a file of the rete)")
    .option('--coordinator <url>', 'coordinator URL (else $FLORETE_COORDINATOR, then the config file); no token is needed')
    .option('--cacert <file>', "CA certificates (PEM) to trust for the coordinator's certificate instead of the system store (else ca_file in the config file)")
    .option('--armor', 'print it ASCII-armored, for a signed-by= file ending in .asc')
    .action(async (o) => done(await (await pkg()).key(o)));

  const ledger = program.command('ledger').description("the coordinator's hash-chained ledger");
  json(remote(ledger.command('verify').description('recompute the hash chain; exit 1 on a break'))).action(async (o) =>
    done(await (await ledgerVerify()).run(o)),
  );
  const audit = program.command('audit').description('the git audit mirror and the signed ledger checkpoints');
  json(
    remote(
      audit
        .command('verify')
        .description(
          'verify the ledger and the audit mirror against it; with --checkpoint, prove a kept checkpoint against the trust chain, the ledger and the mirror; exit 1 on any disagreement',
        ),
    ),
  )
    .option('--checkpoint <file>', 'a checkpoint kept earlier (the output of `retectl audit checkpoint`)')
    .option('--no-mirror', 'with --checkpoint: do not read the git mirror')
    .option('--mirror-clone <dir>', 'with --checkpoint: read this local clone of the audit mirror (your own copy) instead of cloning it from the coordinator')
    .option(
      '--witnesses <K>',
      "also require K nodes to vouch for the ledger's tree: each node's cosignature checked against the key the ledger recorded for it, and the tree now extending what it cosigned",
      integer('--witnesses', 1),
    )
    .action(async (o) => {
      // --no-mirror and --mirror-clone are about a kept checkpoint; without one they would be silently ignored.
      if (o.checkpoint === undefined && (o.mirror === false || o.mirrorClone !== undefined))
        throw usageError('--no-mirror and --mirror-clone go with --checkpoint FILE');
      const code = o.checkpoint === undefined ? await (await ledgerVerify()).run({ ...o, mirror: true }) : await (await auditVerify()).run(o);
      done(o.witnesses === undefined ? code : Math.max(code, await (await auditCosigners()).run({ ...o, witnesses: o.witnesses })));
    });
  json(
    remote(
      audit
        .command('checkpoint')
        .description("print the coordinator's current signed checkpoint (a C2SP signed note, exactly as signed): keep it to verify later"),
    ),
  ).action(async (o) => done(await (await auditCheckpoint()).run(o)));
  json(
    remote(
      audit
        .command('tree')
        .description(
          "verify the ledger's Merkle tree from its tiles: the tree checkpoint's signature, its root and chain line; with --since, that the tree extends a tree checkpoint kept earlier; exit 1 on any disagreement",
        ),
    ),
  )
    .option('--from <dir>', 'read the checkpoint, the trust chain and the tiles from this folder (as --save writes it) instead of the coordinator')
    .option('--since <file>', 'a tree checkpoint kept earlier (GET /v1/ledger/tree/checkpoint): prove the tree now extends it')
    .option('--save <dir>', 'write the checkpoint, the trust chain and every tile into this folder, to verify from later')
    .action(async (o) => done(await (await auditTree()).run(o)));
  json(
    remote(
      audit
        .command('witnesses')
        .description("every node's held checkpoint; flags one position with two hashes, or a hash the ledger no longer has; exit 1 when something is flagged"),
    ),
  ).action(async (o) => done(await (await auditWitnesses()).run(o)));

  const cfg = program.command('config').description(`retectl's own settings (coordinator URL, API token, CA file), stored with mode 0600`);
  cfg
    .command('set')
    .argument('<key>', 'coordinator, token, ca_file or insecure_http')
    .argument('[value]', 'the value; for token, omit it (or give -) to read it from stdin; ca_file: a PEM file; insecure_http: true or false')
    .description('set a config value')
    .action(async (key: string, value: string | undefined) => done(await (await configSet()).run({ key, value })));
  cfg
    .command('unset')
    .argument('<key>')
    .description('remove a config value')
    .action(async (key: string) => done(await (await configUnset()).run({ key })));
  json(cfg.command('show').description('show the config (never the token itself)')).action(async (o) => done(await (await configShow()).run(o)));

  program
    .command('completion')
    .argument('<shell>', 'bash, zsh or fish')
    .description(
      'print a shell completion script (node names from the rete in the current directory): source <(retectl completion bash), the same with zsh in ~/.zshrc, or retectl completion fish | source',
    )
    .action((shell: string) => {
      const scripts = { bash: bashCompletion, zsh: zshCompletion, fish: fishCompletion } as const;
      if (!Object.hasOwn(scripts, shell)) throw usageError(`completion: the shell must be bash, zsh or fish, not ${JSON.stringify(shell)}`);
      process.stdout.write(scripts[shell as keyof typeof scripts](completionTable(program), 'retectl', nodeCommands(program)));
      done(0);
    });

  return { program, status: () => exitStatus };
}
