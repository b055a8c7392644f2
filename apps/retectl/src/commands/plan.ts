import { FILE_ARTIFACT, fileArtifactName, RESOURCES_JSON, RolloutPlan, type ResourcesJson, VersionDetail } from '#contracts';
import { bytesOf, nodesToInspect, planPublish, type ArtifactDigests, type CompiledTree, type Plan, type PlanEntry } from '#rete';
import { renderNodeDiff, textOf, unifiedPatch, useColour, type NodeDiff } from '../unified.js';
import { usageError } from '../errors.js';
import { bounded, formatPlan, LIST_LIMIT } from '../summary.js';
import { CoordinatorClient } from '../client.js';
import { listHeadDigests, listNodes } from '../node-pages.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';
import { digestsOf, loadCompiledTree } from '../rete-dir.js';
import { ineligibleLine } from '../ineligible.js';
import { parseResources, resourcesOf } from '../resources-json.js';
import { rolloutPlanLine, rolloutPlanOf, type RolloutFlags } from '../rollout-plan.js';

export interface PlanOptions extends ConnectionFlags, RolloutFlags {
  readonly dir: string;
  readonly prune?: boolean;
  readonly json?: boolean;
  /** List every node, not only the first changed ones. */
  readonly all?: boolean;
  /** Show the content change of each changing node (or of `nodes`) against its head. */
  readonly diff?: boolean;
  /** With diff: these nodes only. */
  readonly nodes?: readonly string[];
  /** false with --no-color. */
  readonly color?: boolean;
}

/** Exit status of a plan with changes, as `terraform plan -detailed-exitcode`. */
export const PLAN_HAS_CHANGES = 3;

/**
 * Compares the compiled tree with the coordinator's heads by digest; exit 3 when a publish would stamp
 * something. Ineligible nodes it would give new content are named after the summary, with the flag
 * that accepts them.
 */
export async function run(options: PlanOptions): Promise<number> {
  if ((options.nodes?.length ?? 0) > 0 && !options.diff) throw usageError('plan: node names go with --diff (plan --diff NODE…)');
  // --json keeps its shape, which scripts read; the diff is text for a person.
  if (options.diff && options.json)
    throw usageError('plan: --diff prints unified diffs for a person; with --json, read the plan, then retectl show --json NODE');
  const { rete, tree } = loadCompiledTree(options.dir);
  // Before the coordinator is asked anything: a bad rollout flag is a usage error, as in publish.
  const chosen = rolloutPlanOf(rete, options);
  const client = new CoordinatorClient(resolveConnection(options, rete.mesh.coordinator));
  const local = digestsOf(tree);
  // The fleet a page at a time, and the heads as digests only: no artifact content is asked for,
  // except a changed resources.json, whose old content the plan needs to say what changes.
  const heads = { items: await listNodes(client) };
  const digests = new Map((await listHeadDigests(client)).items.map((h) => [h.node, h]));
  const localResources = new Map<string, ResourcesJson>();
  for (const [node, files] of tree) {
    const text = files.get(RESOURCES_JSON);
    if (text !== undefined) localResources.set(node, parseResources(bytesOf(text).toString('utf8'), `${node}'s compiled ${RESOURCES_JSON}`));
  }
  // Only nodes whose set digest differs need their head's per-artifact digests.
  const headArtifacts = new Map<string, ArtifactDigests>();
  const headResources = new Map<string, ResourcesJson>();
  for (const node of nodesToInspect(local, heads.items)) {
    const head = digests.get(node);
    if (!head) continue; // published after the listing was read: planned as new
    headArtifacts.set(node, new Map(head.artifacts.map((a) => [a.name, a.sha256])));
    const headSha = head.artifacts.find((a) => a.name === RESOURCES_JSON)?.sha256;
    if (headSha === undefined) continue;
    if (headSha === local.get(node)?.get(RESOURCES_JSON)) {
      // The same bytes on both sides: nothing to read, nothing changes.
      headResources.set(node, localResources.get(node)!);
      continue;
    }
    const { body } = await client.call('GET', `/v1/nodes/${node}/versions/${head.version}`, VersionDetail);
    const resources = resourcesOf(body);
    if (resources) headResources.set(node, resources);
  }
  const plan = planPublish(local, heads.items, headArtifacts, options.prune ?? false, { local: localResources, head: headResources });
  // The plan's own defaults filled in, as the coordinator will fill them: null for all at once.
  if (options.json) outJson({ ...plan, rollout: chosen ? RolloutPlan.parse(chosen.plan) : null });
  else printPlan(plan, options.all ?? false, rolloutPlanLine(chosen, rete));
  if (options.diff) await printDiffs(client, plan, tree, options);
  // Ineligible nodes do not change the exit status: 3 says a publish would change something, and
  // whether the operator accepts those nodes is for the publish to say.
  return plan.changes ? PLAN_HAS_CHANGES : 0;
}

function printPlan(plan: Plan, all: boolean, rolloutLine: string | undefined): void {
  const ineligible = plan.ineligible.map((n) => `${ineligibleLine(n.node, n.failed_briefing)}; publish with --allow-ineligible ${n.node} to accept`);
  for (const line of formatPlan(plan, { all }, [...(rolloutLine ? [rolloutLine] : []), ...bounded(ineligible, (l) => [l], { all })])) out(line);
}

/**
 * `plan --diff [NODE…]`: the content change of each node a publish would change against its head,
 * rendered as `retectl diff` renders two versions (unified diffs, host resource changes first). Without
 * names, the changing nodes, bounded as the plan's list is; a named node that does not change says so.
 */
async function printDiffs(client: CoordinatorClient, plan: Plan, tree: CompiledTree, options: PlanOptions): Promise<void> {
  const byNode = new Map(plan.entries.map((e) => [e.node, e]));
  const changing = (e: PlanEntry | undefined): e is Extract<PlanEntry, { action: 'new' | 'changed' }> => e?.action === 'new' || e?.action === 'changed';
  const colour = useColour(options.color);
  const named = options.nodes ?? [];
  const entries = named.length > 0 ? named.map((n) => byNode.get(n) ?? n) : plan.entries.filter(changing);
  const listed = named.length > 0 || options.all ? entries : entries.slice(0, LIST_LIMIT);
  for (const e of listed) {
    if (typeof e === 'string') {
      out(`${e}: not in the tree nor at the coordinator`);
      continue;
    }
    if (!changing(e)) {
      out(
        e.action === 'retired'
          ? `${e.node}: retired by this publish (its final version is empty)`
          : `${e.node}: ${e.action === 'unchanged' ? 'unchanged' : 'not in the tree'}: no content change`,
      );
      continue;
    }
    const head =
      e.action === 'changed' ? (await client.call('GET', `/v1/nodes/${encodeURIComponent(e.node)}/versions/${e.version}`, VersionDetail)).body : undefined;
    for (const line of renderNodeDiff(nodeDiff(e, head, tree.get(e.node)!), colour)) out(line);
  }
  if (listed.length < entries.length) out(`… and ${entries.length - listed.length} more; --all or plan --diff NODE… to see them`);
}

/** A node's head (none for a new node) against its compiled files. */
export function nodeDiff(
  e: Extract<PlanEntry, { action: 'new' | 'changed' }>,
  head: VersionDetail | undefined,
  local: ReadonlyMap<string, string | Uint8Array>,
): NodeDiff {
  const from = `${e.node}/v${head?.version ?? 0}`;
  const to = `${e.node}/tree`;
  const headArtifacts = new Map((head?.artifacts ?? []).map((a) => [a.name, a]));
  const headText = (name: string): string | undefined => {
    const a = headArtifacts.get(name);
    return a === undefined ? '' : a.encoding === 'utf-8' ? a.content : undefined;
  };
  const localText = (name: string): string | undefined => {
    const bytes = local.get(name);
    return bytes === undefined ? '' : textOf(bytes);
  };
  const artifacts: string[] = [];
  for (const name of [...new Set([...headArtifacts.keys(), ...local.keys()])].sort()) {
    if (FILE_ARTIFACT.test(name)) continue;
    const a = headText(name);
    const b = localText(name);
    if (a === b) continue;
    artifacts.push(a === undefined || b === undefined ? `Binary ${name} differs\n` : unifiedPatch(`${from}/${name}`, `${to}/${name}`, a, b));
  }
  const files: string[] = [];
  const parse = (text: string | undefined) => (text ? (JSON.parse(text) as ResourcesJson) : undefined);
  const before = parse(headText(RESOURCES_JSON));
  const after = parse(localText(RESOURCES_JSON));
  for (const change of e.resources ?? []) {
    if (change.kind !== 'file' || change.action !== 'changed' || !change.changes.some((c) => c.field === 'content')) continue;
    const oldSha = before?.files.find((f) => f.path === change.path)?.content.sha256;
    const newSha = after?.files.find((f) => f.path === change.path)?.content.sha256;
    if (oldSha === undefined || newSha === undefined) continue;
    const a = headText(fileArtifactName(oldSha));
    const b = localText(fileArtifactName(newSha));
    if (a === undefined || b === undefined) continue; // binary: the resource line says enough
    files.push(unifiedPatch(`${from}${change.path}`, `${to}${change.path}`, a, b));
  }
  return { resources: e.resources ?? [], artifacts, files };
}
