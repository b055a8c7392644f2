import { DiffResponse, FILE_ARTIFACT, fileArtifactName, RESOURCES_JSON, VersionDetail, type ResourcesJson } from '#contracts';
import { diffResources, type ResourceChange } from '#rete';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { out, outJson } from '../output.js';
import { resourcesOf } from '../resources-json.js';
import { renderNodeDiff, unifiedPatch, useColour } from '../unified.js';

export interface DiffOptions extends ConnectionFlags {
  readonly node: string;
  readonly from: number;
  readonly to: number;
  readonly json?: boolean;
  /** false with --no-color. */
  readonly color?: boolean;
}

/**
 * The coordinator's unified diff between two versions of a node (from 0 = everything added). When the
 * host resources changed, their changes come first, by path and package, and a file whose text changed
 * is diffed under its host path: its content artifacts, named by digest, would only show as one
 * whole file removed and another added.
 */
export async function run(options: DiffOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const node = encodeURIComponent(options.node);
  const { body } = await client.call('GET', `/v1/nodes/${node}/diff?from=${options.from}&to=${options.to}`, DiffResponse);
  let resources: ResourceChange[] = [];
  const patches: string[] = [];
  if (body.changed.some((c) => c.name === RESOURCES_JSON)) {
    const version = async (v: number) => (await client.call('GET', `/v1/nodes/${node}/versions/${v}`, VersionDetail)).body;
    const before = options.from > 0 ? await version(options.from) : undefined;
    const after = await version(options.to);
    const a = before ? resourcesOf(before) : undefined;
    const b = resourcesOf(after);
    resources = diffResources(a, b);
    for (const change of resources) {
      if (change.kind !== 'file' || change.action !== 'changed' || !change.changes.some((c) => c.field === 'content')) continue;
      const oldText = textOf(before, a, change.path);
      const newText = textOf(after, b, change.path);
      if (oldText === undefined || newText === undefined) continue; // binary: the resource line says enough
      patches.push(unifiedPatch(`${body.node}/v${body.from}${change.path}`, `${body.node}/v${body.to}${change.path}`, oldText, newText));
    }
  }
  if (options.json) return outJson({ ...body, resources });
  if (body.changed.length === 0) return out(`${body.node}: versions ${body.from} and ${body.to} hold the same artifacts`);
  const artifacts = body.changed.filter((c) => !FILE_ARTIFACT.test(c.name)).map((c) => c.diff);
  for (const line of renderNodeDiff({ resources, artifacts, files: patches }, useColour(options.color))) out(line);
}

/** The text a file resource held in a version; undefined when it is not UTF-8. */
function textOf(version: VersionDetail | undefined, resources: ResourcesJson | undefined, path: string): string | undefined {
  const file = resources?.files.find((f) => f.path === path);
  const artifact = file && version?.artifacts.find((x) => x.name === fileArtifactName(file.content.sha256));
  return artifact?.encoding === 'utf-8' ? artifact.content : undefined;
}
