import { sha256Hex } from '#bundle';
import { RESOURCES_JSON, type ResourcesJson, VersionDetail } from '#contracts';
import { bytesOf, nodesToInspect, planPublish, type ArtifactDigests, type CompiledTree, type Plan } from '#rete';
import { bounded, formatPlan } from '../summary.js';
import { CoordinatorClient } from '../client.js';
import { listHeadDigests, listNodes } from '../node-pages.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';
import { loadCompiledTree } from '../rete-dir.js';
import { ineligibleLine } from '../ineligible.js';
import { parseResources, resourcesOf } from '../resources-json.js';

export interface PlanOptions extends ConnectionFlags {
  readonly dir: string;
  readonly prune?: boolean;
  readonly json?: boolean;
  /** List every node, not only the first changed ones. */
  readonly all?: boolean;
}

/** Exit status of a plan with changes, as `terraform plan -detailed-exitcode`. */
export const PLAN_HAS_CHANGES = 3;

export function digestsOf(tree: CompiledTree): Map<string, ArtifactDigests> {
  return new Map([...tree].map(([node, files]) => [node, new Map([...files].map(([name, text]) => [name, sha256Hex(text)]))]));
}

/**
 * Compares the compiled tree with the coordinator's heads by digest; exit 3 when a publish would stamp
 * something. Ineligible nodes it would give new content are named after the summary, with the flag
 * that accepts them.
 */
export async function run(options: PlanOptions): Promise<number> {
  const { rete, tree } = loadCompiledTree(options.dir);
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
  if (options.json) outJson(plan);
  else printPlan(plan, options.all ?? false);
  // Ineligible nodes do not change the exit status: 3 says a publish would change something, and
  // whether the operator accepts those nodes is for the publish to say.
  return plan.changes ? PLAN_HAS_CHANGES : 0;
}

function printPlan(plan: Plan, all: boolean): void {
  const ineligible = plan.ineligible.map((n) => `${ineligibleLine(n.node, n.failed_briefing)}; publish with --allow-ineligible ${n.node} to accept`);
  for (const line of formatPlan(plan, { all }, bounded(ineligible, (l) => [l], { all }))) out(line);
}
