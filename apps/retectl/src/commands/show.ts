import { VersionDetail, VersionPage } from '#contracts';
import { CoordinatorClient } from '../client.js';
import { resolveConnection, type ConnectionFlags } from '../config.js';
import { RetectlError } from '../errors.js';
import { out, outJson } from '../output.js';

export interface ShowOptions extends ConnectionFlags {
  readonly node: string;
  readonly version?: number;
  readonly json?: boolean;
}

/** The artifacts of one version of a node (its head unless --version says otherwise). */
export async function run(options: ShowOptions): Promise<void> {
  const client = new CoordinatorClient(resolveConnection(options));
  const node = encodeURIComponent(options.node);
  let version = options.version;
  if (version === undefined) {
    const { body } = await client.call('GET', `/v1/nodes/${node}/versions?limit=1`, VersionPage);
    if (body.items.length === 0) throw new RetectlError('not_found', `node ${options.node} has no versions`);
    version = body.items[0].version;
  }
  const { body } = await client.call('GET', `/v1/nodes/${node}/versions/${version}`, VersionDetail);
  if (options.json) return outJson(body);
  out(`node ${body.node} version ${body.version}${body.retired ? ' (retired)' : ''}, set ${body.set_digest}`);
  for (const a of body.artifacts) {
    out(`--- ${a.name} (${a.size} bytes, sha256 ${a.sha256})`);
    out(a.encoding === 'utf-8' ? a.content : `(binary, base64)\n${a.content}`);
  }
}
