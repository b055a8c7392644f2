import { RESOURCES_JSON, ResourcesJson, type VersionDetail } from '#contracts';
import { RetectlError } from './errors.js';

/** The resources.json of a version the coordinator holds, if it has one. */
export function resourcesOf(version: VersionDetail): ResourcesJson | undefined {
  const artifact = version.artifacts.find((a) => a.name === RESOURCES_JSON);
  if (!artifact) return undefined;
  const text = artifact.encoding === 'base64' ? Buffer.from(artifact.content, 'base64').toString('utf8') : artifact.content;
  return parseResources(text, `${RESOURCES_JSON} of ${version.node} version ${version.version}`);
}

/** A resources.json read from the compiled tree or from the coordinator: an edge, so it is parsed. */
export function parseResources(text: string, what: string): ResourcesJson {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new RetectlError('bad_response', `${what} is not JSON`);
  }
  const parsed = ResourcesJson.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RetectlError('bad_response', `${what} does not parse: ${issue.path.join('.') || '(body)'}: ${issue.message}`);
  }
  return parsed.data;
}
