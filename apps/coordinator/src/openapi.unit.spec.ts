import 'reflect-metadata';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { RequestMethod } from '@nestjs/common';
import { openApiDocument } from './openapi.js';
import { LedgerController } from './ledger/ledger.controller.js';
import { QueriesController } from './projections/queries.controller.js';
import { ViewsController } from './projections/views.controller.js';
import { BundlesController } from './bundles/bundles.controller.js';
import { BlobsController } from './bundles/blobs.controller.js';
import { IdentityController } from './identity/identity.controller.js';
import { ReportsController } from './fleet/reports.controller.js';
import { PackagesController } from './packages/packages.controller.js';
import { TrustController } from './trust/trust.controller.js';
import { WitnessesController } from './trust/witnesses.controller.js';
import { TreeController } from './trust/tree.controller.js';
import { RolloutsController } from './rollouts/rollouts.controller.js';
import { POLL_PATH } from './bundles/poll-route.js';
import { BACKUP_PATH } from './db/backup-http.js';

/** The /v1 routes the coordinator actually serves, as OpenAPI `method path` pairs. */
function servedRoutes(): string[] {
  // The poll and backup routes are served by Fastify directly, outside Nest's controllers.
  const out: string[] = [`get ${POLL_PATH.replace(/:(\w+)/g, '{$1}')}`, `post ${BACKUP_PATH}`];
  for (const controller of [
    LedgerController,
    QueriesController,
    ViewsController,
    BundlesController,
    BlobsController,
    IdentityController,
    ReportsController,
    PackagesController,
    TrustController,
    WitnessesController,
    TreeController,
    RolloutsController,
  ]) {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = (controller.prototype as unknown as Record<string, object>)[name];
      const path = Reflect.getMetadata(PATH_METADATA, handler);
      if (name === 'constructor' || typeof handler !== 'function' || path === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number].toLowerCase();
      const full = `/${[base, String(path)].filter((p) => p && p !== '/').join('/')}`
        .replace(/\/+/g, '/')
        .replace(/:(\w+)/g, '{$1}')
        .replace(/\/\*$/, '/{path}');
      if (full.startsWith('/v1/')) out.push(`${method} ${full}`);
    }
  }
  return out.sort();
}

describe('OpenAPI document', () => {
  const doc = openApiDocument() as { paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>> };

  it('documents every /v1 route the coordinator serves, and nothing it does not', () => {
    const all = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`))
      .sort();
    const documented = all.filter((r) => r.split(' ')[1].startsWith('/v1/'));
    // Outside /v1: the anonymous routes (keys, health, the apt repository) and the metrics a reader scrapes.
    expect(all.filter((r) => !documented.includes(r))).toEqual([
      'get /.well-known/jwks.json',
      'get /healthz',
      'get /metrics',
      'get /readyz',
      'get /repo/debian/pool/{file}',
      'get /repo/debian/{file}',
    ]);
    const served = servedRoutes();
    expect(served.length).toBeGreaterThan(15);
    // Admin-only conveniences without a contract of their own are listed here on purpose.
    const undocumented = ['post /v1/projections/rebuild'];
    expect(documented).toEqual(served.filter((r) => !undocumented.includes(r)));
  });

  it('derives bodies from the zod contracts, unknown fields forbidden', () => {
    const body = doc.paths['/v1/publishes'].post.requestBody as {
      content: { 'application/json': { schema: { required: string[]; additionalProperties: unknown } } };
    };
    const schema = body.content['application/json'].schema;
    expect(schema.required).toEqual(expect.arrayContaining(['message', 'nodes']));
    expect(schema.additionalProperties).toBe(false);
  });
});
