// The files of the agent's package other than the bundle itself: /usr/bin/flor, the unit, the
// default config, DEBIAN/control and the maintainer scripts.
import { spawnSync } from 'node:child_process';

/**
 * Flags /usr/bin/flor gives node: `--lite-mode`, V8's own low-memory mode (no compilers to machine
 * code: bytecode only, with feedback kept only for code that runs often). The agent is a daemon that
 * idles between polls and does little computing in a pass (hashes and signature checks run in
 * OpenSSL, not in JavaScript), so JavaScript that is never compiled further costs it nothing that
 * matters, while the compilers' memory and the machine code of warm functions are what it would hold
 * for its whole life. Measured with `npm run bench:agent` (bench/README.md).
 *
 * Lite mode removes WebAssembly from the runtime. The agent uses none (its requests go through
 * node:http, not fetch, whose HTTP parser is WebAssembly; the bundle is one ES module, so Node's
 * CommonJS lexer never runs). Node 20 warns about that on every start unless told that WebAssembly
 * is off (`--no-expose-wasm`); Node 24 and later have no such flag and refuse to start when given it.
 * Node 22 gets neither: its node:http, imported as an ES module, reads every export, fetch's
 * WebSocket among them, which loads fetch's WebAssembly parser, so under lite mode (or with
 * WebAssembly off) the agent dies at its first request. WITHOUT_LITE_MODE names such lines.
 *
 * `--gc-memory-reducer-start-delay-ms=2000`: V8 gives back the memory a pass used once the process
 * has gone quiet, but waits 8 s before it even starts looking; the agent goes quiet right after each
 * pass, so 2 s brings it back to its idle size sooner after every pass. It changes when the collector
 * runs, never what it keeps.
 *
 * None of them is needed for the agent to be correct, and each Node.js line accepts its own set of
 * V8 flags, so the launcher asks the node it is about to run which of them it accepts
 * (`node FLAG --version` parses the flag and exits without starting a JavaScript engine) and passes
 * only those. A host whose nodejs is upgraded keeps its agent; a flag a future line drops costs
 * memory, never the agent. test/agent-package.e2e.spec.ts runs the launcher on every supported line.
 *
 * Tried and left out: --max-semi-space-size=1, --optimize-for-size, --v8-pool-size=1,
 * --single-threaded-gc and MALLOC_ARENA_MAX (nothing beyond the noise).
 */
export const NODE_FLAGS = ['--lite-mode', '--no-expose-wasm', '--gc-memory-reducer-start-delay-ms=2000'];
/** The flags that take WebAssembly away, which a line in WITHOUT_LITE_MODE must not get. */
const WASM_FLAGS = ['--lite-mode', '--no-expose-wasm'];
/** Node.js lines (a `node --version` prefix) whose node:http needs WebAssembly when imported as an ES module. */
const WITHOUT_LITE_MODE = ['v22.'];

/**
 * The flags of the single executable, which carries its own node (the one that built it) and takes
 * them from its blob: chosen the same way as the launcher chooses.
 */
export function seaFlags(node) {
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const withoutLite = WITHOUT_LITE_MODE.some((line) => version.startsWith(line));
  return NODE_FLAGS.filter((flag) => !(withoutLite && WASM_FLAGS.includes(flag)) && spawnSync(node, [flag, '--version'], { stdio: 'ignore' }).status === 0);
}

/** /usr/bin/flor: runs the bundle next to it with the node on PATH (Debian's nodejs, NodeSource's, or a tarball's). Resolves its own path, so the .tar.gz tree runs from any folder. */
export function wrapperScript() {
  return [
    '#!/bin/sh',
    '# Florete node agent: the bundled program in ../lib/florete-agent, run by Node.js 20 or later.',
    'here=$(dirname "$(readlink -f "$0")")',
    '# Memory-saving V8 flags, each passed only if this node accepts it: Node.js lines differ, and a',
    '# node given a flag it does not know refuses to start. Lite mode and --no-expose-wasm take',
    "# WebAssembly away, which Node 22's node:http needs: not there.",
    'case "$(node --version 2>/dev/null)" in',
    `  ${WITHOUT_LITE_MODE.map((l) => `${l}*`).join(' | ')}) skip="${WASM_FLAGS.join(' ')}" ;;`,
    '  *) skip= ;;',
    'esac',
    'flags=',
    `for flag in ${NODE_FLAGS.join(' ')}; do`,
    '  case " $skip " in *" $flag "*) continue ;; esac',
    '  node "$flag" --version >/dev/null 2>&1 && flags="$flags $flag"',
    'done',
    'exec node $flags "$here/../lib/florete-agent/flor.mjs" "$@"',
    '',
  ].join('\n');
}

/** The unit in deploy/systemd, which is the package's: checked here so the two cannot drift apart. */
export function systemdUnit(text) {
  for (const line of ['ExecStart=/usr/bin/flor agent run --config /etc/florete/agent.yaml', 'Restart=always']) {
    if (!text.split('\n').includes(line)) throw new Error(`deploy/systemd/florete-agent.service must say ${line}`);
  }
  return text;
}

/** /etc/florete/agent.yaml, a conffile: the unit names it, and an operator's edits survive upgrades. */
export function defaultConfig() {
  return `# Florete node agent: the local config (never published). Every key and its default:
# /usr/share/doc/florete-agent/README.md. Check it with: flor self-check
# A commented-out key is absent unless you set it; remove the "# " to set it.
state_dir: /var/lib/florete/agent
install:
  dir: /etc/florete            # every artifact goes here by default …
  paths: {}                    # … unless it has its own path, e.g. flor.json: /etc/florete/vertex/flor.json
activation:
  kind: none                   # or: kind: command, command: systemctl restart florete-vertex
# vertex_control:              # hot reload: hand a new set to the running vertex first, restart only if it cannot take it
#   socket: /run/florete/vertex.sock
#   timeout_ms: 5000
default_poll_interval: 60      # until a set with an agent.json is active
request_timeout_seconds: 10
max_backoff_seconds: 300
# tls:                         # absent: Node's CA list, the system bundle and NODE_EXTRA_CA_CERTS
#   ca_file: /etc/florete/ca.pem   # the only CAs trusted for the coordinator's certificate
# insecure_http: true          # send the node credential over plain http to a coordinator on another machine
packages:
  apt:
    sources_dir: /etc/apt/sources.list.d   # which declared files are apt sources
    options: []                # extra -o Name=value for every apt-get, e.g. [Acquire::Retries=3]
    timeout_seconds: 600       # each apt-get is stopped after this long
    lock_timeout_seconds: 300  # how long apt-get waits for the dpkg lock
max_staleness: 24h             # status says "stale since …" when no newer signed checkpoint came for this long
self_upgrade:
  package: florete-agent       # the agent's own package
  binary: /usr/bin/flor        # what the new version's package installs; run once (self-check) before the hand-over
  check_timeout_seconds: 60    # the self-check is stopped, and failed, after this long
`;
}

export function controlFile({ version, installedKiB }) {
  return `Package: florete-agent
Version: ${version}
Architecture: all
Maintainer: Florete <packages@florete.invalid>
Installed-Size: ${installedKiB}
Depends: nodejs (>= 20)
Section: admin
Priority: optional
Description: Florete node agent (flor)
 Enrols the node with its Florete coordinator, then pulls the node's signed
 bundle, verifies it, applies its host resources, installs its artifacts,
 activates them and reports back. One bundled file run by Node.js 20 or later;
 the systemd unit florete-agent.service runs it (enable it after enrolling).
`;
}

/**
 * The maintainer scripts, each only for what dpkg cannot do itself. None starts, enables or restarts
 * the agent: enabling is the operator's step after enrolment, and an upgrade must never restart the
 * agent under itself (when the agent upgrades its own package it exits, and systemd's Restart=always
 * starts the new one).
 */
export function maintainerScripts() {
  const systemd = '[ -d /run/systemd/system ]';
  return {
    // An upgraded unit file must be the one systemd uses when it next starts the agent.
    postinst: `#!/bin/sh
set -e
if [ "$1" = configure ] && ${systemd}; then systemctl daemon-reload || true; fi
exit 0
`,
    // Removing (not upgrading): stop the agent, whose program is about to go.
    prerm: `#!/bin/sh
set -e
if [ "$1" = remove ] && ${systemd}; then systemctl stop florete-agent.service || true; fi
exit 0
`,
    // Purge also removes the state dir systemd created (StateDirectory=): it holds the node's credential.
    postrm: `#!/bin/sh
set -e
if [ "$1" = purge ]; then
  rm -rf /var/lib/florete/agent
  rmdir /var/lib/florete 2>/dev/null || true
fi
if { [ "$1" = remove ] || [ "$1" = purge ]; } && ${systemd}; then systemctl daemon-reload || true; fi
exit 0
`,
  };
}
