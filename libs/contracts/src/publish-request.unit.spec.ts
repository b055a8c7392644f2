import fc from 'fast-check';
import { PublishRequest } from './api.schema.js';
import { isPlainPublishRequest } from './publish-request.js';

/** An object as JSON.parse builds it from entries: own properties only, `__proto__` included as a plain key. */
const objectOf = (entries: readonly (readonly [string, unknown])[]): unknown =>
  JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`);

const sha = fc.stringMatching(/^[0-9a-f]{64}$/);
const nearSha = fc.oneof(
  { weight: 30, arbitrary: sha },
  sha.map((s) => s.toUpperCase()),
  sha.map((s) => s.slice(1)),
  fc.constant('xyz'),
  fc.integer(),
);
const artifactName = fc.oneof(
  { weight: 20, arbitrary: fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,10}$/) },
  fc.constantFrom('VERSION', '.hidden', '__proto__', 'a/b', '', 'x'.repeat(129)),
);
const nodeName = fc.oneof(
  { weight: 20, arbitrary: fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?$/) },
  { weight: 1, arbitrary: fc.constantFrom('Bad', '-x', 'x-', '__proto__', '', 'a'.repeat(64)) },
);
const artifacts = fc.array(fc.tuple(artifactName, nearSha), { maxLength: 4 }).map(objectOf);
const entry = fc.oneof(
  { weight: 20, arbitrary: artifacts.map((a) => ({ artifacts: a })) },
  { weight: 1, arbitrary: artifacts.map((a) => ({ artifacts: a, extra: 1 })) },
  { weight: 1, arbitrary: fc.constantFrom(null, [], 'x', {}, { artifacts: [] }, { artifacts: null }) },
);
const names = fc.oneof(
  { weight: 10, arbitrary: fc.array(nodeName, { maxLength: 3 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      null,
      'edge',
      [1],
      Array.from({ length: 101 }, (_, i) => `t${i}`),
    ),
  },
);
const labelEntry = fc.oneof(
  { weight: 20, arbitrary: fc.record({ tags: names, groups: names }) },
  { weight: 1, arbitrary: fc.constantFrom(null, [], {}, { tags: [] }, { tags: [], groups: [], extra: [] }) },
);
const request = fc
  .record(
    {
      message: fc.oneof({ weight: 8, arbitrary: fc.string({ maxLength: 20 }) }, { weight: 1, arbitrary: fc.constantFrom('m'.repeat(4097), 7, null) }),
      expected_position: fc.oneof({ weight: 8, arbitrary: fc.nat() }, { weight: 1, arbitrary: fc.constantFrom(-1, 1.5, 2 ** 53, '3', null) }),
      prune: fc.oneof({ weight: 8, arbitrary: fc.boolean() }, { weight: 1, arbitrary: fc.constantFrom('yes', 0) }),
      nodes: fc.oneof(
        { weight: 8, arbitrary: fc.array(fc.tuple(nodeName, entry), { maxLength: 5 }).map(objectOf) },
        { weight: 1, arbitrary: fc.constantFrom(null, [], 'all') },
      ),
      labels: fc.oneof(
        { weight: 8, arbitrary: fc.array(fc.tuple(nodeName, labelEntry), { maxLength: 3 }).map(objectOf) },
        { weight: 1, arbitrary: fc.constantFrom(null, [], 'all') },
      ),
    },
    { requiredKeys: [] },
  )
  .chain((r) =>
    // Now and then, a field the check leaves to the schema, or one the schema does not know.
    fc
      .oneof({ weight: 10, arbitrary: fc.constant({}) }, fc.record({ allow_ineligible: fc.array(nodeName, { maxLength: 2 }) }), fc.constant({ surprise: true }))
      .map((extra) => ({ ...r, ...extra })),
  )
  .map((r) => JSON.parse(JSON.stringify(r)) as unknown);

describe('the plain publish request check', () => {
  it('accepts only what the PublishRequest schema accepts, and then as it is', () => {
    let accepted = 0;
    fc.assert(
      fc.property(request, (body) => {
        if (!isPlainPublishRequest(body)) return;
        accepted++;
        const parsed = PublishRequest.safeParse(body);
        expect(parsed.success).toBe(true);
        expect(parsed.data).toEqual(body);
      }),
      { numRuns: 5000 },
    );
    // Not vacuous: a good share of the generated requests take the fast path.
    expect(accepted).toBeGreaterThan(100);
  });

  it('accepts the tree retectl sends, and declines what it is not sure of', () => {
    const digest = 'a'.repeat(64);
    const tree = {
      message: 'rollout',
      expected_position: 12,
      prune: true,
      nodes: { 'node-1': { artifacts: { 'flor.json': digest, 'agent.json': digest } }, 'node-2': { artifacts: {} } },
    };
    expect(isPlainPublishRequest(tree)).toBe(true);
    expect(isPlainPublishRequest({ ...tree, allow_ineligible: ['node-1'] })).toBe(false);
    expect(isPlainPublishRequest({ ...tree, nodes: { 'node-1': { artifacts: { VERSION: digest } } } })).toBe(false);
    expect(
      isPlainPublishRequest({ ...tree, nodes: { 'node-1': { artifacts: Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`f${i}`, digest])) } } }),
    ).toBe(false);
    expect(isPlainPublishRequest({ ...tree, expected_position: -1 })).toBe(false);
    expect(isPlainPublishRequest({ ...tree, labels: { 'node-1': { tags: ['edge'], groups: ['ops'] } } })).toBe(true);
    expect(isPlainPublishRequest({ ...tree, labels: { 'node-1': { tags: ['Edge'], groups: [] } } })).toBe(false);
    expect(isPlainPublishRequest({ ...tree, labels: { 'node-1': { tags: [] } } })).toBe(false);
  });
});
