// The files of the coordinator's package around the built program: /usr/bin/florete-coordinator, the
// environment file, DEBIAN/control and the maintainer scripts. The unit is deploy/systemd's.

export const PACKAGE = 'florete-coordinator';
/** The system user the service runs as; the package creates it. */
export const USER = 'florete-coordinator';
/** Where the built program and its production node_modules go. */
export const LIB_DIR = 'usr/lib/florete-coordinator';
export const ENV_FILE = '/etc/florete/coordinator.env';
export const STATE_DIR = '/var/lib/florete/coordinator';

/**
 * /usr/bin/florete-coordinator: the built program, run by the node on PATH; never a rebuild. Run by
 * hand (`runuser -u florete-coordinator -- florete-coordinator token create-admin`) it must reach the
 * same data dir and database as the service, so it reads the service's environment file too; a
 * variable already in its environment wins, so a caller (or systemd, which read the same file) can
 * override any of it. The file holds plain KEY=value lines, without quotes, as the unit reads them.
 */
export function launcherScript() {
  return `#!/bin/sh
# Florete coordinator: the built program in /${LIB_DIR}, run by Node.js.
# FLORETE_ENV_FILE= (empty) reads no environment file.
env_file=\${FLORETE_ENV_FILE-${ENV_FILE}}
if [ -n "$env_file" ] && [ -r "$env_file" ]; then
  while IFS= read -r line || [ -n "$line" ]; do
    case $line in ''|'#'*) continue ;; esac
    key=\${line%%=*}
    value=\${line#*=}
    case $key in ''|[0-9]*|*[!A-Za-z0-9_]*) continue ;; esac
    # Only names checked above reach eval; the value is never evaluated.
    eval "isset=\\\${$key+x}"
    [ -n "$isset" ] || export "$key=$value"
  done < "$env_file"
fi
exec node /${LIB_DIR}/dist/apps/coordinator/src/main.js "$@"
`;
}

/** The unit in deploy/systemd, which is the package's: checked here so the two cannot drift apart. */
export function systemdUnit(text) {
  const lines = text.split('\n');
  for (const line of [
    'ExecStart=/usr/bin/florete-coordinator serve',
    `User=${USER}`,
    `EnvironmentFile=${ENV_FILE}`,
    'StateDirectory=florete/coordinator',
    `ReadWritePaths=${STATE_DIR}`,
    'ProtectSystem=strict',
    'CapabilityBoundingSet=',
  ]) {
    if (!lines.includes(line)) throw new Error(`deploy/systemd/florete-coordinator.service must say ${line}`);
  }
  return text;
}

/** /etc/florete/coordinator.env, a conffile: the unit reads it, and an operator's edits survive upgrades. */
export function defaultEnvironment() {
  return `# Florete coordinator: the environment florete-coordinator.service runs with, and that
# /usr/bin/florete-coordinator reads when run by hand. A conffile: edits survive upgrades.
# Plain KEY=value lines, no quotes. Every variable: /usr/share/doc/florete-coordinator/README.md.
# It may hold a database password: it is root:${USER}, mode 0640.
FLORETE_DATA=${STATE_DIR}
HOST=127.0.0.1
PORT=8080
# PostgreSQL instead of the embedded database in FLORETE_DATA (required for more than one replica):
#DATABASE_URL=postgres://florete:secret@127.0.0.1:5432/florete
# Listening beyond loopback needs TLS: a certificate and its key the service user can read ...
#FLORETE_TLS_CERT=/etc/florete/tls/coordinator.crt
#FLORETE_TLS_KEY=/etc/florete/tls/coordinator.key
# ... or a TLS-terminating proxy in front (FLORETE_TRUSTED_PROXIES: its addresses)
#FLORETE_TLS=proxy
#FLORETE_LOG_LEVEL=info
`;
}

/**
 * package.json's engines.node (">=22", ">=20.19.0") as a Debian dependency: the package asks for the
 * Node.js lines the tree says it supports, no more, no less.
 */
export function nodeDependency(engines) {
  const m = /^>=\s*(\d+(?:\.\d+){0,2})$/.exec((engines ?? '').trim());
  if (!m) throw new Error(`package.json engines.node ${JSON.stringify(engines)} is not of the form ">=N": cannot say which nodejs the package depends on`);
  return `nodejs (>= ${m[1]})`;
}

export function controlFile({ version, installedKiB, node }) {
  return `Package: ${PACKAGE}
Version: ${version}
Architecture: all
Maintainer: Florete <packages@florete.invalid>
Installed-Size: ${installedKiB}
Depends: adduser, ${node}, xz-utils, zstd
Section: admin
Priority: optional
Description: Florete coordinator: configuration ledger and bundle server
 The coordinator's built program and its production dependencies, run by
 Node.js, with the systemd unit florete-coordinator.service (a system user of
 its own, a sandbox) and its environment file /etc/florete/coordinator.env.
 State, the embedded database included, lives in /var/lib/florete/coordinator.
 xz-utils and zstd read the control archives of pushed packages.
`;
}

/**
 * The maintainer scripts. The service is neither enabled nor started on install: the operator sets
 * the environment file first (database, TLS). An upgrade restarts a running service, so the new
 * program serves.
 *
 * Purge removes the state (the embedded database, keys, the first admin token file) but keeps the
 * system user and group, as Debian advises for system accounts: files the operator gave it elsewhere
 * (a TLS key, a backup) would otherwise be owned by a uid the next new account may get.
 */
export function maintainerScripts() {
  const systemd = '[ -d /run/systemd/system ]';
  return {
    postinst: `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  if ! getent passwd ${USER} >/dev/null; then
    adduser --system --group --quiet --home ${STATE_DIR} --no-create-home --shell /usr/sbin/nologin --gecos 'Florete coordinator' ${USER}
  fi
  # The state dir exists before the first start, so commands run by hand as the user work too;
  # systemd's StateDirectory= keeps it owned by the user.
  install -d -m 0755 /var/lib/florete
  install -d -m 0700 -o ${USER} -g ${USER} ${STATE_DIR}
  # The environment file may hold a database password: readable by root and the service only.
  if [ -e ${ENV_FILE} ]; then
    chown root:${USER} ${ENV_FILE}
    chmod 0640 ${ENV_FILE}
  fi
  if ${systemd}; then
    systemctl daemon-reload || true
    if [ -n "$2" ]; then systemctl try-restart florete-coordinator.service || true; fi
  fi
fi
exit 0
`,
    prerm: `#!/bin/sh
set -e
if [ "$1" = remove ] && ${systemd}; then systemctl stop florete-coordinator.service || true; fi
exit 0
`,
    postrm: `#!/bin/sh
set -e
if [ "$1" = purge ]; then
  rm -rf ${STATE_DIR}
  rmdir /var/lib/florete 2>/dev/null || true
fi
if { [ "$1" = remove ] || [ "$1" = purge ]; } && ${systemd}; then systemctl daemon-reload || true; fi
exit 0
`,
  };
}
