import { lstatSync, readFileSync } from 'node:fs';
import { arch, cpus, hostname, platform, release, totalmem } from 'node:os';
import { resolve } from 'node:path';
import type { Agent } from 'node:https';
import type * as jose from 'jose';
import { cleartextRefusal } from '#tls';
import { EnrolAnswer, NodeName, type AgentConfig, type AgentIdentity, type OwnedCopy } from '#contracts';
import { keyThumbprint, sha256Hex } from '#bundle';
import { AptPackageManager } from '../agent/apt.js';
import { configPathFor, loadConfig, stateDirFor, type CommonOptions } from '../agent/config.js';
import { agentOwnPaths } from '../agent/installer.js';
import { adoptOwned, type Adoption } from '../agent/owned-recovery.js';
import type { InstalledPackage } from '../agent/package-manager.js';
import type { StateDir } from '../agent/state-dir.js';
import { answerError, httpCall } from '../agent/http.js';
import { coordinatorAgent } from '../agent/transport.js';
import { newWitnessKey, writeWitnessFile } from '../agent/witness.js';
import { AgentError, UsageError } from '../errors.js';
import { AGENT_VERSION } from '../version.js';

/** fle.<id>.<secret>.<signing key thumbprint>[.<TLS key pin>]: the pin when the coordinator serves TLS itself. */
const TOKEN = /^fle\.[0-9a-f]{18}\.[A-Za-z0-9_-]{43}\.([A-Za-z0-9_-]{43})(?:\.([A-Za-z0-9_-]{43}))?$/;
const TIMEOUT_MS = 15_000;

/** Only the public members a verifier needs: nothing else from the network is kept. */
function publicKey(jwk: jose.JWK): jose.JWK {
  const { kty, crv, x, kid } = jwk;
  return { kty, crv, x, kid, alg: 'EdDSA', use: 'sig' };
}

/**
 * Finds the key the token vouches for in the coordinator's JWKS. This runs before anything is sent:
 * a coordinator (or anything in between) that cannot show that key never sees the token.
 */
async function vouchedKey(coordinator: URL, thumbprint: string, agent: Agent | undefined): Promise<jose.JWK> {
  const a = await httpCall(new URL('/.well-known/jwks.json', coordinator), { timeoutMs: TIMEOUT_MS, maxBytes: 1024 * 1024, agent });
  if (a.status !== 200) throw answerError(a, 'fetching the coordinator keys');
  let keys: jose.JWK[];
  try {
    keys = (JSON.parse(a.body.toString('utf8')) as { keys: jose.JWK[] }).keys;
    if (!Array.isArray(keys)) throw new Error('no keys array');
  } catch (err) {
    throw new AgentError('bad_response', `${coordinator.origin}/.well-known/jwks.json is not a JWKS: ${(err as Error).message}`);
  }
  for (const k of keys) {
    if (k.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.x !== 'string') continue;
    if ((await keyThumbprint({ kty: k.kty, crv: k.crv, x: k.x })) === thumbprint) return { ...k, kid: k.kid ?? thumbprint };
  }
  throw new AgentError(
    'thumbprint_mismatch',
    `no signing key of ${coordinator.origin} has the thumbprint ${thumbprint} that the enrolment token carries: wrong coordinator, or something in between; nothing was sent`,
  );
}

export type RunOptions = CommonOptions & { coordinator: string; token: string; node?: string; cacert?: string; insecureHttp?: boolean };

/** Stands for "content unknown" in installed.json: never a real digest, so the next install rewrites or removes the file. */
const UNKNOWN_CONTENT = '0'.repeat(64);

export async function run(options: RunOptions): Promise<void> {
  let coordinator: URL;
  try {
    coordinator = new URL(options.coordinator);
    if (coordinator.protocol !== 'http:' && coordinator.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    throw new UsageError(`--coordinator ${options.coordinator} is not an http(s) URL`);
  }
  const m = TOKEN.exec(options.token.trim());
  if (!m) throw new UsageError('--token is not an enrolment token (fle.<id>.<secret>.<thumbprint>[.<tls pin>])');
  const [, thumbprint, tlsPin] = m;
  const config = loadConfig(options);
  const dir = stateDirFor(options, config);
  // Before any connection: the token must not cross the network in clear.
  const insecureHttp = options.insecureHttp === true || config.insecure_http === true;
  const refusal = cleartextRefusal(coordinator, 'enrolment token', 'pass --insecure-http', insecureHttp);
  if (refusal) throw new UsageError(refusal);
  if (tlsPin !== undefined && coordinator.protocol !== 'https:') {
    throw new UsageError(
      `the enrolment token pins the coordinator's TLS key, so it serves https: use https://${coordinator.host}${coordinator.pathname.replace(/\/+$/, '')} as --coordinator; nothing was sent`,
    );
  }
  const caFile = options.cacert !== undefined ? resolve(options.cacert) : config.tls?.ca_file;
  // With a pin, the pin alone admits the server: a CA vouching for some other key is not the coordinator the token names.
  const agent = coordinatorAgent(
    coordinator,
    { caFile, caFrom: options.cacert !== undefined ? '--cacert' : 'tls.ca_file', pin: tlsPin, requirePin: tlsPin !== undefined, insecureHttp },
    'enrolment token',
  );

  if (options.node !== undefined && !NodeName.safeParse(options.node).success) throw new UsageError(`--node ${options.node} is not a node name (a DNS label)`);
  // The name this host expects to be, when it knows one (its enrolment, else the local set it runs): the coordinator checks it against the token's node.
  const expected = options.node ?? dir.readIdentity()?.node ?? dir.readState().local_set?.node;

  const pinned = publicKey(await vouchedKey(coordinator, thumbprint, agent));
  // This enrolment's witness key: the coordinator records its public half in the ledger with the enrolment.
  const witness = newWitnessKey();
  const body = {
    token: options.token.trim(),
    witness_key: witness.publicKey,
    ...(expected ? { node: expected } : {}),
    profile: {
      hostname: hostname(),
      os: platform(),
      arch: arch(),
      agent_version: AGENT_VERSION,
      clock: new Date().toISOString(),
      os_release: release(),
      runtime: `node ${process.version}`,
    },
    inventory: { cpus: cpus().length, memory_bytes: totalmem() },
  };
  let a = await httpCall(new URL('/v1/enrol', coordinator), { method: 'POST', body, timeoutMs: TIMEOUT_MS, maxBytes: 1024 * 1024, agent });
  // A coordinator that predates witness keys refuses the unknown member before it looks at the token: enrol without it, register later.
  const keyRefused = a.status === 422 && /witness_key/.test(a.body.toString('utf8'));
  if (keyRefused) {
    const { witness_key: _omitted, ...plain } = body;
    a = await httpCall(new URL('/v1/enrol', coordinator), { method: 'POST', body: plain, timeoutMs: TIMEOUT_MS, maxBytes: 1024 * 1024, agent });
  }
  if (a.status !== 201 && a.status !== 200) {
    const err = answerError(a, 'enrolling');
    throw a.status >= 400 && a.status < 500 ? new AgentError('enrol_refused', err.message) : err;
  }
  let parsed;
  try {
    parsed = EnrolAnswer.safeParse(JSON.parse(a.body.toString('utf8')));
  } catch {
    parsed = null;
  }
  if (!parsed?.success)
    throw new AgentError(
      'bad_response',
      `the enrolment answer does not match the contract${parsed ? `: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}` : ''}`,
    );
  const res = parsed.data;

  dir.ensure();
  const previous = dir.readIdentity();
  if (previous && previous.node !== res.node) {
    throw new AgentError('already_enrolled', `${dir.root} belongs to node ${previous.node}, the token is for ${res.node}: use a fresh --state-dir`);
  }
  const identity: AgentIdentity = {
    coordinator: coordinator.origin + coordinator.pathname.replace(/\/+$/, ''),
    node: res.node,
    credential: res.credential,
    pinned_jwks: { keys: [pinned as Record<string, unknown>] },
    enrolled_at: new Date().toISOString(),
    ...(tlsPin !== undefined ? { tls_pin: tlsPin } : {}),
    ...(options.cacert !== undefined ? { ca_file: resolve(options.cacert) } : {}),
    ...(options.insecureHttp === true && coordinator.protocol === 'http:' ? { insecure_http: true } : {}),
  };
  const recovered = recoverInstalled(dir, res.installed ?? null);
  let resources: Adoption | null = null;
  let notRecovered: string | null = null;
  try {
    resources = await recoverOwned(dir, config, options, res.owned ?? null);
  } catch (err) {
    // The coordinator already took the token: the enrolment stands, and the operator hears what was not taken back.
    notRecovered = (err as Error).message;
  }
  dir.writeIdentity(identity);
  writeWitnessFile(dir.root, { enrolled_at: identity.enrolled_at, private_key: witness.privateKey, public_key: witness.publicKey, registered: !keyRefused });
  // A new enrolment is the way back from retirement; the retired mark belonged to the old one. It
  // also just reached the coordinator, so a run of passes that could not is over.
  const state = dir.readState();
  if (state.retired || state.disconnected_since) dir.writeState({ ...state, retired: null, disconnected_since: null });
  process.stdout.write(
    `enrolled ${res.node} with ${identity.coordinator}; pinned key ${String(pinned.kid)}${tlsPin ? `; pinned TLS key sha256 ${tlsPin}` : ''}; identity in ${dir.identityPath}\n`,
  );
  if (res.briefing) {
    process.stdout.write(`briefing: ${res.briefing.outcome}\n`);
    for (const line of res.briefing.lines) process.stdout.write(`  ${line.outcome === 'pass' ? 'pass' : 'FAIL'}  ${line.check}: ${line.detail}\n`);
    // Adoption completed either way; the node is only marked, so this is a warning and not a failure.
    if (res.briefing.outcome !== 'pass')
      process.stderr.write(`warning: ${res.node} is enrolled but ineligible until it enrols with every briefing check passing\n`);
  }
  if (recovered > 0)
    process.stdout.write(
      `recovered ${recovered} installed file${recovered === 1 ? '' : 's'} from the coordinator's copy: the next applied set removes those it no longer has\n`,
    );
  if (resources) {
    const files = Object.keys(resources.owned.files).length;
    const packages = Object.keys(resources.owned.packages).length;
    process.stdout.write(
      `recovered ${files} file resource${files === 1 ? '' : 's'} and ${packages} package resource${packages === 1 ? '' : 's'} from the coordinator's copy: the next applied set removes those it no longer declares\n`,
    );
    for (const l of resources.left) process.stdout.write(`  not recovered: ${l.resource}: ${l.reason}\n`);
  }
  if (notRecovered !== null) {
    process.stderr.write(
      `warning: the host resources in the coordinator's copy were not recovered (${notRecovered}); enrol again with a new token before a set is applied to retry\n`,
    );
  }
}

/**
 * Lost store, host resources: the coordinator's copy of what the node last reported it owns is taken
 * back into owned-files.json, entry by entry as far as the host still matches it (adoptOwned says
 * which). A store that still records any resource is more precise than the copy and is kept.
 */
async function recoverOwned(dir: StateDir, config: AgentConfig, options: RunOptions, copy: OwnedCopy | null): Promise<Adoption | null> {
  if (!copy || Object.keys(copy.files).length + Object.keys(copy.packages).length === 0) return null;
  const record = dir.readOwned();
  if (Object.keys(record.files).length > 0 || Object.keys(record.packages).length > 0) return null;
  const files = new Map<string, string | null>();
  for (const path of Object.keys(copy.files)) files.set(path, regularFileDigest(path));
  const managers = { apt: new AptPackageManager(config.packages.apt) };
  const packages = new Map<string, InstalledPackage>();
  for (const [name, p] of Object.entries(copy.packages)) packages.set(name, await managers[p.manager].query(name));
  const configPath = configPathFor(options);
  const adoption = adoptOwned(copy, { files, packages }, agentOwnPaths(dir.root, config, configPath ? [configPath] : []));
  if (Object.keys(adoption.owned.files).length + Object.keys(adoption.owned.packages).length > 0) dir.writeOwned(adoption.owned);
  return adoption;
}

/** sha256 of the regular file at `path` (a link is not followed), or null when there is none. */
function regularFileDigest(path: string): string | null {
  try {
    return lstatSync(path).isFile() ? sha256Hex(readFileSync(path)) : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw err;
  }
}

/**
 * Lost store: with no record of what it installed, the agent would strand every file the node owned.
 * The coordinator's recovery copy becomes the record, with unknown content, so the next install
 * rewrites the files the set still has and removes the rest. A store that still lists files is
 * more precise than the copy and is kept.
 */
function recoverInstalled(dir: StateDir, copy: readonly string[] | null): number {
  const owned = (copy ?? []).filter((p) => p.startsWith('/'));
  if (owned.length === 0 || Object.keys(dir.readInstalled().files).length > 0) return 0;
  dir.writeInstalled({ files: Object.fromEntries(owned.map((p) => [p, UNKNOWN_CONTENT])), complete_version: 0 });
  return owned.length;
}
