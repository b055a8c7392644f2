import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, type Stats } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import {
  AGENT_JSON,
  AgentJson,
  CompiledSetDigests,
  DIGESTS_JSON,
  fileArtifactName,
  MGMT_DIR,
  RESOURCES_JSON,
  ResourcesJson,
  type AgentConfig,
  type ApplySetOutcome,
  type LocalSetRecord,
  type ReportResource,
} from '#contracts';
import { setDigest, sha256Hex } from '#bundle';
import { AgentError, type AgentErrorCode } from '../errors.js';
import type { Activated, Activator } from './activator.js';
import { fsyncDir, symlinkAtomic, writeFileDurable } from '#runtime';
import { ResourcePassFailed } from './resource-pass.js';
import { configDigest } from './local-config.js';
import { installSet } from './installer.js';
import type { Log } from '#runtime';
import type { StateDir } from './state-dir.js';
import type { SyncPass } from './sync-pass.js';

/** The copy of digests.json kept in a staged local set; artifact names never start with a dot. */
export const LOCAL_SET_DIGESTS = '.digests.json';
/** A digest list is a few KiB even for a full set; anything far larger is not one. */
const MAX_DIGESTS_BYTES = 1024 * 1024;

/** A local set the agent will not apply, said before anything was changed. */
export class LocalSetRefused extends AgentError {}

/** A compiled node folder that passed every check: its artifacts' bytes, read once and checked. */
export interface LocalSet {
  readonly source: string;
  readonly digests: CompiledSetDigests;
  readonly files: ReadonlyMap<string, Buffer>;
}

const refused = (code: AgentErrorCode, message: string): LocalSetRefused => new LocalSetRefused(code, message);

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw refused('not_a_set', `cannot read ${path}: ${(err as Error).message}`);
  }
}

function readOrRefuse(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw refused('not_a_set', `cannot read ${path}: ${(err as Error).message}`);
  }
}

function listOrRefuse(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch (err) {
    throw refused('not_a_set', `cannot list ${dir}: ${(err as Error).message}`);
  }
}

const issues = (e: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string =>
  e.issues.map((i) => `${i.path.map(String).join('.') || '(root)'}: ${i.message}`).join('; ');

function parseJson(path: string, bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw refused('not_a_set', `${path} is not JSON: ${(err as Error).message}`);
  }
}

/**
 * Reads a compiled node folder (as `retectl compiled <node> --out <dir>` writes it: digests.json and the artifacts it lists) and
 * checks it whole before anything is applied: the folder holds exactly the files the list names and
 * the list, each with the listed size and sha256, the list's set digest is its artifacts' digest,
 * agent.json is for the node the list names, and resources.json (if any) is valid with every file
 * content present. A folder compiled by an earlier retectl, with the artifacts in mgmt/ beside the
 * list, is read the same way. The first problem refuses the set with the file it is about: nothing is
 * changed.
 */
export function readCompiledSet(source: string): LocalSet {
  const top = lstatOrNull(source);
  if (!top) throw refused('not_a_set', `${source} does not exist`);
  if (!top.isDirectory()) throw refused('not_a_set', `${source} is not a folder: give the node's folder retectl writes, retectl compiled <node> --out <dir>`);
  const listPath = join(source, DIGESTS_JSON);
  const list = lstatOrNull(listPath);
  if (!list) {
    const parent = dirname(source);
    const hint =
      basename(source) === MGMT_DIR && existsSync(join(parent, DIGESTS_JSON))
        ? `: give its parent folder, ${parent}`
        : `: give the folder retectl writes for the node, retectl compiled <node> --out <dir> (a compile by an older retectl wrote no ${DIGESTS_JSON}: compile again)`;
    throw refused('not_a_set', `${source} is not a compiled node folder: it has no ${DIGESTS_JSON}${hint}`);
  }
  if (!list.isFile()) throw refused('not_a_set', `${listPath} is not a regular file`);
  if (list.size > MAX_DIGESTS_BYTES) throw refused('not_a_set', `${listPath} is ${list.size} bytes: not a digest list (at most ${MAX_DIGESTS_BYTES})`);
  const entries = listOrRefuse(source);
  const parsed = CompiledSetDigests.safeParse(parseJson(listPath, readOrRefuse(listPath)));
  if (!parsed.success) throw refused('not_a_set', `${listPath} is not a digest list: ${issues(parsed.error)}`);
  const digests = parsed.data;
  const listed = new Map(digests.artifacts.map((a) => [a.name, a]));

  // A compile by an earlier retectl: the artifacts in mgmt/, and nothing else beside the list.
  const legacy = entries.includes(MGMT_DIR) && !listed.has(MGMT_DIR) && lstatOrNull(join(source, MGMT_DIR))?.isDirectory() === true;
  const artifactsDir = legacy ? join(source, MGMT_DIR) : source;
  if (legacy) {
    for (const name of entries) {
      if (name !== DIGESTS_JSON && name !== MGMT_DIR)
        throw refused('set_mismatch', `${join(source, name)} is not part of a compiled set: the folder holds only ${DIGESTS_JSON} and ${MGMT_DIR}/`);
    }
  }
  const present = legacy ? listOrRefuse(artifactsDir) : entries.filter((name) => name !== DIGESTS_JSON);
  for (const name of present) {
    if (!listed.has(name)) throw refused('set_mismatch', `${join(artifactsDir, name)} is not in ${listPath}: an extra file in the set`);
  }
  const files = new Map<string, Buffer>();
  for (const a of digests.artifacts) {
    const path = join(artifactsDir, a.name);
    const st = lstatOrNull(path);
    if (!st) throw refused('set_mismatch', `${path} is missing: ${listPath} lists it`);
    if (!st.isFile()) throw refused('set_mismatch', `${path} is not a regular file`);
    const bytes = st.size === a.size ? readOrRefuse(path) : null;
    const sha = bytes ? sha256Hex(bytes) : null;
    if (!bytes || sha !== a.sha256 || bytes.byteLength !== a.size) {
      throw refused(
        'set_mismatch',
        `${path} does not match ${listPath}: it has ${sha ? `sha256 ${sha}, ` : ''}${bytes?.byteLength ?? st.size} bytes; the list says sha256 ${a.sha256}, ${a.size} bytes`,
      );
    }
    files.set(a.name, bytes);
  }
  const digest = setDigest(digests.artifacts);
  if (digest !== digests.set_digest) throw refused('set_mismatch', `${listPath} says set_digest ${digests.set_digest}, its artifacts give ${digest}`);

  const agentBytes = files.get(AGENT_JSON);
  if (!agentBytes) throw refused('not_a_set', `${artifactsDir} has no ${AGENT_JSON}: not a compiled set`);
  const agent = AgentJson.safeParse(parseJson(join(artifactsDir, AGENT_JSON), agentBytes));
  if (!agent.success) throw refused('not_a_set', `${join(artifactsDir, AGENT_JSON)} is not a valid ${AGENT_JSON}: ${issues(agent.error)}`);
  if (agent.data.node !== digests.node)
    throw refused('set_mismatch', `${join(artifactsDir, AGENT_JSON)} is for node ${agent.data.node}, ${listPath} for ${digests.node}`);

  const resourcesBytes = files.get(RESOURCES_JSON);
  if (resourcesBytes) {
    const resources = ResourcesJson.safeParse(parseJson(join(artifactsDir, RESOURCES_JSON), resourcesBytes));
    if (!resources.success) throw refused('bad_resources', `${join(artifactsDir, RESOURCES_JSON)}: ${issues(resources.error)}`);
    for (const f of resources.data.files) {
      const name = fileArtifactName(f.content.sha256);
      if (!files.has(name)) throw refused('set_mismatch', `${join(artifactsDir, RESOURCES_JSON)} declares ${f.path} with content ${name}, which the set lacks`);
    }
  }
  return { source, digests, files };
}

/**
 * `flor agent apply --set <dir>`: the first node's way to run a set before any coordinator exists.
 * The same path as a sync pass, in the same store: verify (against the digest list, not a signature:
 * the operator is at the keyboard), stage as sets/local-<set digest>, apply the host resources,
 * switch `active`, install, activate, record in state.json. Only for a node no coordinator owns yet
 * (hosted, no coordinator's version ever applied); an enrolled node is refused. Running it again with
 * the same set changes nothing; a crash part-way is finished by running it again.
 */
export class LocalSetApply {
  constructor(
    private readonly dir: StateDir,
    private readonly config: AgentConfig,
    private readonly activator: Activator,
    private readonly pass: SyncPass,
    private readonly log: Log,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async run(request: { readonly dir: string; readonly node?: string }): Promise<ApplySetOutcome> {
    const base: ApplySetOutcome = { result: 'refused', source: request.dir, node: null, set_digest: null, activation: null, code: null, reason: null };
    let set: LocalSet;
    try {
      this.refuseOwned();
      set = readCompiledSet(request.dir);
      this.refuseOtherNode(set, request.node);
    } catch (err) {
      if (!(err instanceof LocalSetRefused)) throw err;
      this.log('warn', 'local set refused', { source: request.dir, code: err.code, reason: err.message });
      return { ...base, code: err.code, reason: err.message };
    }
    const { node, set_digest: digest } = set.digests;
    const named = { ...base, node, set_digest: digest };
    const state = this.dir.readState();
    if (state.local_set?.set_digest === digest && this.dir.activeLocalSet() === digest) {
      return { ...named, result: 'unchanged' };
    }

    this.stage(set);
    // Host resources before the switch, as in a pass: a set whose resources fail never becomes the active one.
    let resources: ReportResource[];
    try {
      resources = await this.pass.applyResources({ payload: { retired: false, version: 0 }, files: set.files });
    } catch (err) {
      return this.failed(named, err);
    }
    symlinkAtomic(this.dir.localSetLinkTarget(digest), this.dir.activeLink);
    let activated: Activated;
    try {
      installSet(this.dir, this.config, 0, set.files);
      activated = await this.activator.activate(this.dir.localSetDir(digest), 0);
    } catch (err) {
      // Switched to and partly installed: no set is in effect until it is applied again.
      return this.failed(named, err, true);
    }
    const record: LocalSetRecord = {
      node,
      set_digest: digest,
      source: set.source,
      applied_at: this.now().toISOString(),
      config_digest: configDigest(set.files),
    };
    const after = this.dir.readState();
    this.dir.writeState({ ...after, local_set: record, last_result: 'applied', last_error: null, unapplied: null });
    this.dir.pruneSets();
    this.log('info', 'local set applied', { node, set_digest: digest, source: set.source, activation: activated.activation, resources: resources.length });
    return { ...named, result: 'applied', activation: activated.activation, ...(resources.length > 0 ? { resources } : {}) };
  }

  /** A coordinator owns an enrolled node, and a store that holds a coordinator's version belongs to one. */
  private refuseOwned(): void {
    const identity = this.dir.readIdentity();
    if (identity) {
      throw refused(
        'coordinator_owned',
        `this node is enrolled as ${identity.node} with ${identity.coordinator}: the coordinator owns what it runs, and its next version would replace a local set; publish the change instead (a local set is for a node before it is enrolled)`,
      );
    }
    const active = this.dir.activeVersion();
    const applied = this.dir.readState().applied_version;
    if (active > 0 || applied > 0) {
      throw refused(
        'coordinator_owned',
        `${this.dir.root} holds version ${Math.max(active, applied)} from a coordinator: a local set is for a node no coordinator has given a set yet; use a fresh state dir`,
      );
    }
  }

  /** The node this host is to be: --node when given, else the node of the local set in effect. */
  private refuseOtherNode(set: LocalSet, wanted: string | undefined): void {
    const node = set.digests.node;
    if (wanted !== undefined) {
      if (wanted !== node) throw refused('wrong_node', `${set.source} holds the set of node ${node}, not of ${wanted} (--node ${wanted})`);
      return;
    }
    const current = this.dir.readState().local_set?.node;
    if (current !== undefined && current !== node) {
      throw refused(
        'wrong_node',
        `${set.source} holds the set of node ${node}, and this host runs the local set of node ${current}: give --node ${node} to make it ${node} instead`,
      );
    }
  }

  /** Staged under a temp name and renamed whole, like a version's set; the digest list is kept beside the artifacts. */
  private stage(set: LocalSet): void {
    const final = this.dir.localSetDir(set.digests.set_digest);
    if (existsSync(final)) return;
    this.dir.ensure();
    const staging = this.dir.stagingDir('local', randomBytes(4).toString('hex'));
    mkdirSync(staging, { recursive: true, mode: 0o755 });
    for (const [name, content] of set.files) writeFileDurable(join(staging, name), content, 0o644);
    writeFileDurable(join(staging, LOCAL_SET_DIGESTS), `${JSON.stringify(set.digests)}\n`, 0o644);
    fsyncDir(staging);
    renameSync(staging, final);
    fsyncDir(this.dir.setsDir);
  }

  private failed(named: ApplySetOutcome, err: unknown, switched = false): ApplySetOutcome {
    const message = err instanceof Error ? err.message : String(err);
    const code = err instanceof AgentError ? err.code : ((err as NodeJS.ErrnoException).code ?? 'install_failed');
    const resources = err instanceof ResourcePassFailed ? err.resources : undefined;
    this.log('error', 'local set failed', { node: named.node, set_digest: named.set_digest, code, reason: message });
    const state = this.dir.readState();
    this.dir.writeState({ ...state, last_result: 'failed', last_error: message, ...(switched ? { local_set: null } : {}) });
    // A set staged and never switched to is not kept.
    this.dir.pruneSets();
    return { ...named, result: 'failed', code, reason: message, ...(resources ? { resources } : {}) };
  }
}
