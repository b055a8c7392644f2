import { z } from 'zod';
import * as C from '#contracts';

interface Route {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
  summary: string;
  access: string;
  body?: z.ZodType;
  query?: z.ZodObject;
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
}

const problem = (description: string) => ({ description, schema: C.Problem, contentType: 'application/problem+json' });
const rateLimited = problem('too many requests from this address (see Retry-After)');
const std = {
  401: problem('missing, unknown, expired (code token_expired) or revoked (code token_revoked) credential'),
  403: problem('role, node or scope not allowed'),
  422: problem('invalid input'),
  503: problem('code database_unavailable: this replica cannot reach its database; retry after Retry-After'),
};
/** A node credential revoked at retirement is told apart (code retired_credential) from any other refusal. */
/** A publish or rollback giving ineligible nodes new content without accepting them gets code ineligible_nodes and their failed lines. */
const ineligibleOr422 = {
  description: 'invalid input; code ineligible_nodes: nodes with a failed enrolment briefing that allow_ineligible does not name',
  schema: C.IneligibleNodesProblem.or(C.Problem),
  contentType: 'application/problem+json',
};
const retiredOr401 = problem('missing, unknown or revoked credential; code retired_credential: the node was retired');

/** Every route with the contract schemas it parses and answers: the OpenAPI document is generated from these. */
const ROUTES: Route[] = [
  {
    method: 'post',
    path: '/v1/blobs/missing',
    summary: 'Which of these blobs the coordinator lacks',
    access: 'publisher',
    body: C.BlobsMissingRequest,
    responses: { 200: { description: 'missing digests', schema: C.BlobsMissingResponse }, ...std },
  },
  {
    method: 'get',
    path: '/v1/heads',
    summary: 'Every node head as digests only (no artifact contents), a page at a time; with artifacts=false, set digests alone',
    access: 'reader',
    query: C.HeadsQuery,
    responses: { 200: { description: 'a page of heads (items without artifacts with artifacts=false)', schema: C.HeadsPage }, ...std },
  },
  {
    method: 'get',
    path: '/v1/heads/buckets',
    summary:
      "The digest of each bucket of active heads, at one ledger position, and of each bucket of the nodes' recorded labels: a client compares its tree bucket by bucket",
    access: 'reader',
    responses: { 200: { description: 'the bucket digests', schema: C.HeadBuckets }, ...std },
  },
  {
    method: 'post',
    path: '/v1/blobs',
    summary: 'Upload many blobs in one tar archive (application/x-tar), each entry named by its sha256; the first bad entry refuses them all',
    access: 'publisher',
    responses: { 200: { description: 'every blob stored', schema: C.BlobArchiveResponse }, ...std },
  },
  {
    method: 'put',
    path: '/v1/blobs/{sha256}',
    summary: 'Upload a content-addressed blob (application/octet-stream)',
    access: 'publisher',
    responses: { 200: { description: 'already stored' }, 201: { description: 'stored' }, ...std },
  },
  {
    method: 'put',
    path: '/v1/packages/{sha256}',
    summary: "Push a .deb to the mesh's apt repository (application/octet-stream); its control fields are read from the package",
    access: 'publisher',
    responses: {
      200: { description: 'the same bytes were pushed before: nothing recorded', schema: C.PackagePushResponse },
      201: { description: 'recorded in the ledger and served', schema: C.PackagePushResponse },
      409: problem('code package_conflict: this name, version and architecture were pushed with other content'),
      413: problem('larger than FLORETE_PACKAGE_LIMIT'),
      415: problem('not application/octet-stream'),
      ...std,
      422: problem('code invalid_deb: not a Debian package the repository can serve; digest_mismatch; invalid input'),
    },
  },
  {
    method: 'get',
    path: '/v1/packages',
    summary: "The packages in the mesh's apt repository, in push order, with who pushed them",
    access: 'reader',
    responses: { 200: { description: 'packages', schema: C.PackageList }, ...std },
  },
  {
    method: 'post',
    path: '/v1/publishes',
    summary: 'Publish a tree of node artifact sets',
    access: 'publisher',
    body: C.PublishRequest,
    responses: {
      200: { description: 'nothing changed', schema: C.PublishResponse },
      201: { description: 'stamped', schema: C.PublishResponse },
      409: problem('stale expected_position, or the publish changes nodes of a rollout in progress'),
      ...std,
      422: ineligibleOr422,
    },
  },
  {
    method: 'post',
    path: '/v1/nodes/{node}/rollback',
    summary: "Stamp a new version carrying an older version's content",
    access: 'publisher',
    body: C.RollbackRequest,
    responses: { 201: { description: 'stamped', schema: C.PublishResponse }, 404: problem('unknown node or version'), ...std, 422: ineligibleOr422 },
  },
  {
    method: 'post',
    path: '/v1/nodes/{node}/retire',
    summary: "Stamp the final empty set; with lost: true also revoke the node's credentials in the same transaction (a node that will never apply it)",
    access: 'publisher; admin with lost',
    body: C.RetireRequest,
    responses: {
      200: { description: 'lost: already retired, its credentials revoked now', schema: C.RetireResponse },
      201: { description: 'retired', schema: C.RetireResponse },
      409: problem('already retired (lost: and holds no live credential)'),
      ...std,
    },
  },
  {
    method: 'get',
    path: '/v1/nodes/{node}/bundle',
    summary:
      "The node's signed bundle (compact JWS). With If-None-Match and `Prefer: wait=<seconds>` (RFC 7240) a watch: held until the bundle changes (200) or the wait, capped by the coordinator and with a little jitter, runs out (304 with Preference-Applied)",
    access: 'node',
    responses: {
      200: { description: 'bundle', contentType: 'application/jose', schema: z.string() },
      304: { description: 'If-None-Match matched (after the wait, for a watch)' },
      ...std,
      401: retiredOr401,
      503: problem('too many watches held, shutting down, or the database unavailable: retry after Retry-After'),
    },
  },
  {
    method: 'post',
    path: '/v1/nodes/{node}/reports',
    summary: 'An agent reports what it applied',
    access: 'node',
    body: C.ReportRequest,
    responses: { 204: { description: 'recorded' }, ...std, 401: retiredOr401 },
  },
  {
    method: 'put',
    path: '/v1/nodes/{node}/witness-key',
    summary: 'An agent registers its witness key (Ed25519, for cosigning tree checkpoints): once per credential, recorded in the ledger',
    access: 'node',
    body: C.WitnessKeyRequest,
    responses: {
      200: { description: 'recorded, or recorded before with this key', schema: C.WitnessKeyResponse },
      409: problem('another witness key was registered with this credential'),
      ...std,
    },
  },
  {
    method: 'get',
    path: '/v1/nodes',
    summary: 'Every known node: head, lifecycle state, convergence, last contact',
    access: 'reader',
    query: C.NodesQuery,
    responses: { 200: { description: 'nodes', schema: C.NodeList }, ...std },
  },
  {
    method: 'get',
    path: '/v1/nodes/{node}',
    summary: 'One node as the list shows it, with what its agent last reported doing to each host resource',
    access: 'reader',
    responses: { 200: { description: 'the node', schema: C.NodeDetail }, 404: problem('unknown node'), ...std },
  },
  {
    method: 'get',
    path: '/v1/nodes/{node}/versions',
    summary: "A node's version history, newest first",
    access: 'reader',
    query: C.PageQuery,
    responses: { 200: { description: 'a page', schema: C.VersionPage }, ...std },
  },
  {
    method: 'get',
    path: '/v1/nodes/{node}/versions/{version}',
    summary: "One version's artifacts",
    access: 'reader',
    responses: { 200: { description: 'the set', schema: C.VersionDetail }, 404: problem('unknown'), ...std },
  },
  {
    method: 'get',
    path: '/v1/nodes/{node}/diff',
    summary: 'Changed artifacts between two versions, each with a unified diff',
    access: 'reader',
    query: C.DiffQuery,
    responses: { 200: { description: 'diff', schema: C.DiffResponse }, ...std },
  },
  {
    method: 'get',
    path: '/v1/publishes',
    summary: 'Publishes, newest first',
    access: 'reader',
    query: C.PageQuery,
    responses: { 200: { description: 'a page', schema: C.PublishList }, ...std },
  },
  {
    method: 'get',
    path: '/v1/publishes/{id}',
    summary: 'One publish and how far it reached: applied, outstanding, failed, reverted or superseded per node',
    access: 'reader',
    responses: { 200: { description: 'publish', schema: C.PublishDetail }, 404: problem('unknown'), ...std },
  },
  {
    method: 'get',
    path: '/v1/publishes/{id}/counts',
    summary:
      "One publish's counts (applied, outstanding, failed, reverted, superseded) and its convergence over time, never its nodes: the same size for 10 nodes or 10,000",
    access: 'reader',
    responses: { 200: { description: 'counts', schema: C.PublishCountsResponse }, 404: problem('unknown'), ...std },
  },
  {
    method: 'get',
    path: '/v1/publishes/{id}/nodes',
    summary: "A page of one publish's nodes in name order, optionally of one status, with the whole publish's counts",
    access: 'reader',
    query: C.PublishNodesQuery,
    responses: { 200: { description: 'a page', schema: C.PublishNodesPage }, 404: problem('unknown'), ...std },
  },
  {
    method: 'get',
    path: '/v1/fleet/overview',
    summary: 'The fleet counted by the coordinator: lifecycle, convergence, agent versions, last-contact ages, and the nodes needing attention first',
    access: 'reader',
    responses: { 200: { description: 'the overview', schema: C.FleetOverview }, ...std },
  },
  {
    method: 'post',
    path: '/v1/publishes/{id}/confirm',
    summary: 'Confirm a publish made with confirm_within: its nodes keep the versions instead of reverting',
    access: 'publisher',
    responses: {
      200: { description: 'confirmed', schema: C.ConfirmResponse },
      404: problem('unknown publish'),
      409: problem('no window, confirmed already, or no node runs it any more'),
      ...std,
    },
  },
  {
    method: 'get',
    path: '/v1/rollouts',
    summary: 'Rollouts (publishes released in waves), newest first',
    access: 'reader',
    responses: { 200: { description: 'rollouts', schema: C.RolloutListResponse }, ...std },
  },
  {
    method: 'get',
    path: '/v1/rollouts/{id}',
    summary: 'One rollout: its plan, each wave with what its nodes reported, and its timeline',
    access: 'reader',
    responses: { 200: { description: 'rollout', schema: C.RolloutView }, 404: problem('unknown'), ...std },
  },
  {
    method: 'post',
    path: '/v1/rollouts/{id}/{action}',
    summary: 'Pause, resume, promote (release the next wave now) or abort (halt and roll back) a rollout',
    access: 'publisher',
    body: C.RolloutActionRequest,
    responses: {
      200: { description: 'the rollout after the action', schema: C.RolloutView },
      404: problem('unknown'),
      409: problem('not in a state that allows the action'),
      ...std,
    },
  },
  {
    method: 'get',
    path: '/v1/ledger/head',
    summary: 'The ledger head',
    access: 'reader',
    responses: { 200: { description: 'head', schema: C.LedgerHead }, ...std },
  },
  {
    method: 'get',
    path: '/v1/ledger/events',
    summary: 'Ledger events after a position',
    access: 'reader',
    query: C.LedgerEventsQuery,
    responses: { 200: { description: 'events', schema: C.LedgerEventPage }, ...std },
  },
  {
    method: 'get',
    path: '/v1/ledger/checkpoint',
    summary: 'The latest signed checkpoint: the C2SP signed note exactly as signed, and its position, hash and time',
    access: 'reader',
    responses: { 200: { description: 'checkpoint', schema: C.CheckpointResponse }, 404: problem('none signed yet'), ...std },
  },
  {
    method: 'get',
    path: '/v1/ledger/witnesses',
    summary: "The checkpoint each node's agent last reported holding, by node name, with the ledger's hash today at its position",
    access: 'reader',
    query: C.WitnessesQuery,
    responses: { 200: { description: 'a page', schema: C.WitnessesResponse }, ...std },
  },
  {
    method: 'post',
    path: '/v1/ledger/verify',
    summary: 'Recompute the hash chain; with ?mirror=true also cross-check the git audit mirror',
    access: 'reader',
    query: z.strictObject({ mirror: z.enum(['true', 'false']).optional() }),
    responses: { 200: { description: 'verdict', schema: C.LedgerVerifyResponse }, ...std },
  },
  {
    method: 'post',
    path: '/v1/enrolment-tokens',
    summary: 'Issue a single-use enrolment token',
    access: 'admin',
    body: C.EnrolmentTokenRequest,
    responses: { 201: { description: 'token, shown once', schema: C.EnrolmentTokenResponse }, ...std },
  },
  {
    method: 'post',
    path: '/v1/enrol',
    summary: 'Enrol a node with its token',
    access: 'enrolment token',
    body: C.EnrolRequest,
    responses: {
      201: { description: 'credential, shown once', schema: C.EnrolResponse },
      401: problem('bad token'),
      413: problem('body over 64 KiB'),
      415: problem('not application/json'),
      422: problem('invalid input'),
      429: rateLimited,
    },
  },
  {
    method: 'post',
    path: '/v1/admin/backup',
    summary:
      'A consistent backup of the embedded database with the signing keys file and the repository key, as one tar (manifest.json, db.tar.gz, signing-keys.json, repo-signing-key.asc); `coordinator restore DIR` restores it',
    access: 'admin',
    responses: {
      200: { description: 'the backup', contentType: 'application/x-tar' },
      409: problem('code backup_unavailable: the coordinator runs on PostgreSQL, which is backed up with pg_dump'),
      ...std,
    },
  },
  {
    method: 'delete',
    path: '/v1/nodes/{node}/credential',
    summary: "Revoke the node's credential",
    access: 'admin',
    responses: { 200: { description: 'revoked' }, ...std },
  },
  {
    method: 'post',
    path: '/v1/api-tokens',
    summary: 'Create an API token: ttl_seconds, no_expiry, or neither for the configured default life (FLORETE_API_TOKEN_TTL)',
    access: 'admin',
    body: C.ApiTokenRequest,
    responses: { 201: { description: 'token, shown once, and when it expires', schema: C.ApiTokenResponse }, ...std },
  },
  {
    method: 'get',
    path: '/v1/api-tokens',
    summary: 'Every API token, revoked and expired ones too, with who created it, its expiry and last use; never a secret',
    access: 'admin',
    responses: { 200: { description: 'tokens', schema: C.ApiTokenList }, ...std },
  },
  {
    method: 'delete',
    path: '/v1/api-tokens/{token}',
    summary: 'Revoke an API token, by id or by name: refused from then on, on every replica; recorded in the ledger with who',
    access: 'admin',
    responses: {
      200: { description: 'the token, revoked', schema: C.ApiTokenInfo },
      404: problem('code unknown_token'),
      409: problem(
        'code already_revoked; ambiguous_token (a name several tokens hold: give the id); last_admin_token (the last admin token that has not expired)',
      ),
      ...std,
    },
  },
  {
    method: 'get',
    path: '/v1/whoami',
    summary: 'The API token of the request: its name, role and expiry',
    access: 'reader',
    responses: { 200: { description: 'the token', schema: C.WhoamiResponse }, ...std },
  },
  {
    method: 'get',
    path: '/.well-known/jwks.json',
    summary: 'The bundle-signing public keys (JWKS)',
    access: 'anonymous',
    responses: { 200: { description: 'JWKS' }, 429: rateLimited },
  },
  {
    method: 'get',
    path: '/repo/debian/{file}',
    summary:
      "The mesh's flat apt repository: Packages, Packages.gz, Release, InRelease, Release.gpg, and its signing key as key.gpg (binary, for signed-by) and key.asc",
    access: 'anonymous',
    responses: { 200: { description: 'the file' }, 304: { description: 'If-None-Match matched' }, 404: problem('no such file'), 429: rateLimited },
  },
  {
    method: 'get',
    path: '/repo/debian/pool/{file}',
    summary: 'A pushed package file, <sha256>.deb, as the Packages index names it',
    access: 'anonymous',
    responses: {
      200: { description: 'the .deb', contentType: 'application/vnd.debian.binary-package' },
      304: { description: 'If-None-Match matched' },
      404: problem('no such package file'),
      429: rateLimited,
    },
  },
  {
    method: 'get',
    path: '/healthz',
    summary: 'Liveness: the process answers',
    access: 'anonymous',
    responses: { 200: { description: 'alive' }, 429: rateLimited },
  },
  {
    method: 'get',
    path: '/readyz',
    summary: 'Readiness: the database answers; mirror lag is reported',
    access: 'anonymous',
    responses: { 200: { description: 'ready' }, 503: { description: 'not ready' }, 429: rateLimited },
  },
  {
    method: 'get',
    path: '/v1/ledger/tree/checkpoint',
    summary: "The signed checkpoint of the ledger's Merkle tree (C2SP tlog-checkpoint: origin, size, RFC 6962 root, time, trust, chain)",
    access: 'reader',
    responses: { 200: { description: 'the signed note', contentType: 'text/plain', schema: z.string() }, 404: problem('none signed yet'), ...std },
  },
  {
    method: 'get',
    path: '/v1/ledger/tree/checkpoint/cosigned',
    summary:
      "The signed tree checkpoint with the fleet's cosignatures of it appended as signature lines (C2SP tlog-cosignature): those of at most `limit` nodes, by name, that cosigned exactly it, each verified under the key the ledger recorded",
    access: 'reader',
    query: C.CosignedCheckpointQuery,
    responses: {
      200: { description: 'the signed note and its cosignature lines', contentType: 'text/plain', schema: z.string() },
      404: problem('none signed yet'),
      ...std,
    },
  },
  {
    method: 'get',
    path: '/v1/ledger/tree/tile/{path}',
    summary:
      "The Merkle tree as C2SP tlog-tiles, up to the signed tree checkpoint: tile/<L>/<N>[.p/<W>] (256 hashes of tree level 8·L) and tile/entries/<N>[.p/<W>] (each event's chain hash, uint16 length-prefixed)",
    access: 'reader',
    responses: { 200: { description: 'the tile', contentType: 'application/octet-stream' }, 404: problem('no such tile in the signed tree'), ...std },
  },
  {
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics',
    access: 'reader',
    responses: { 200: { description: 'text exposition format', contentType: 'text/plain', schema: z.string() }, ...std },
  },
  {
    method: 'post',
    path: '/v1/keys/rotate',
    summary:
      'A new signing key: a new trust version signed by the old key, every node head moved to the new key (its bundle is signed with it when next fetched)',
    access: 'admin',
    responses: { 201: { description: 'the new signer, its trust version and the JWKS', schema: C.KeyRotationResponse }, ...std },
  },
  {
    method: 'post',
    path: '/v1/keys/{kid}/revoke',
    summary: 'A trust version that revokes the key (revoking the signer also rotates); agents refuse what it signs',
    access: 'admin',
    responses: {
      201: { description: 'the signer, the trust version and the JWKS', schema: C.KeyRotationResponse },
      404: problem('code unknown_key: no such key'),
      409: problem('code already_revoked'),
      ...std,
    },
  },
  {
    method: 'get',
    path: '/v1/trust',
    summary: 'The signed trust versions after ?after, oldest first: each signed by a key of the version before it',
    access: 'anonymous',
    query: C.TrustChainQuery,
    responses: { 200: { description: 'trust versions', schema: C.TrustChainResponse }, 422: problem('invalid query'), 429: rateLimited },
  },
];

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of ROUTES) {
    const params = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    const queryParams = r.query
      ? Object.entries(r.query.shape).map(([name, s]) => ({
          name,
          in: 'query',
          required: !(s as z.ZodType).safeParse(undefined).success,
          schema: jsonSchema(s as z.ZodType, 'input'),
        }))
      : [];
    (paths[r.path] ??= {})[r.method] = {
      summary: r.summary,
      description: `Access: ${r.access}`,
      security: r.access === 'enrolment token' || r.access === 'anonymous' ? [] : [{ bearer: [] }],
      parameters: [...params, ...queryParams],
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(r.body, 'input') } } } } : {}),
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, res]) => [
          status,
          {
            description: res.description,
            ...(res.schema ? { content: { [res.contentType ?? 'application/json']: { schema: jsonSchema(res.schema, 'output') } } } : {}),
          },
        ]),
      ),
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Florete coordinator', version: '1', description: 'Event-sourced ledger of per-node configuration sets, served as signed bundles.' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _s, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}
