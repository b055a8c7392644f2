import fc from 'fast-check';
import { FlorJson } from '#contracts';
import { compileRete, EXAMPLE_RETE, validateRete, type Source } from '#rete';
import { layout, render, reteSpec, type ReteSpec } from '../../rete/src/rete.arbitrary.spec.js';
import { classifyChange } from './classify-change.js';
import { decideApply, initialRunning } from './apply.decider.js';

/** The example rete with `edit` applied to one file's text: alpha:web lets group:ops (beta, laptop) in. */
function compiled(edit: (file: string, text: string) => string = (_f, t) => t): ReadonlyMap<string, FlorJson> {
  const sources: Source[] = Object.entries(EXAMPLE_RETE).map(([file, text]) => ({ file, text: edit(file, text) }));
  const { rete, diagnostics } = validateRete(sources);
  if (!rete) throw new Error(`the edited example does not validate: ${JSON.stringify(diagnostics)}`);
  return new Map([...compileRete(rete)].map(([node, files]) => [node, FlorJson.parse(JSON.parse(files.get('flor.json') as string))]));
}

const replaceIn = (target: string, from: string, to: string) => (file: string, text: string) => {
  if (file !== target) return text;
  if (!text.includes(from)) throw new Error(`${target} does not hold ${from}`);
  return text.replace(from, to);
};

function compileSpec(spec: ReteSpec, l: { files: number; seed: number }): ReadonlyMap<string, FlorJson> {
  const { rete, diagnostics } = validateRete(render(spec, l));
  if (!rete) throw new Error(`generated rete does not validate: ${JSON.stringify(diagnostics)}`);
  return new Map([...compileRete(rete)].map(([node, files]) => [node, FlorJson.parse(JSON.parse(files.get('flor.json') as string))]));
}

/** A rete and the same rete with some group members and some ACL rules taken away: a revocation. */
const revocation = reteSpec.chain((spec) =>
  fc
    .record({
      groups: fc.tuple(...spec.groups.map((g) => fc.subarray(g.members).map((members) => ({ name: g.name, members })))),
      acl: fc.subarray([...spec.acl]),
    })
    .map((edit): [ReteSpec, ReteSpec] => [spec, { ...spec, ...edit }]),
);

describe('classifyChange of what the compiler makes of a rete edit', () => {
  it('never restarts a vertex for a change to groups or ACL rules alone, revocation or grant', () => {
    fc.assert(
      fc.property(revocation, layout, ([full, revoked], l) => {
        const before = compileSpec(full, l);
        const after = compileSpec(revoked, l);
        for (const [node, flor] of before) {
          expect([node, classifyChange(flor, after.get(node)!).kind]).not.toEqual([node, 'restart']);
          expect([node, classifyChange(after.get(node)!, flor).kind]).not.toEqual([node, 'restart']);
        }
      }),
      { numRuns: 150 },
    );
  });

  const before = compiled();

  it('swaps a revocation that takes a node out of an allowed group, on every node it touches', () => {
    const after = compiled(replaceIn('policy.yaml', 'members: [beta, laptop]', 'members: [beta]'));
    const alpha = classifyChange(before.get('alpha')!, after.get('alpha')!);
    const laptop = classifyChange(before.get('laptop')!, after.get('laptop')!);
    expect(alpha.kind).toBe('swappable');
    expect(laptop.kind).toBe('swappable');
    expect(classifyChange(before.get('beta')!, after.get('beta')!).kind).toBe('none');
    for (const p of [...alpha.changed, ...laptop.changed]) expect(p.startsWith('acl.')).toBe(true);
  });

  it('leaves the revoked node refused and the node still in the group admitted after the swap', () => {
    const after = compiled(replaceIn('policy.yaml', 'members: [beta, laptop]', 'members: [beta]'));
    const running = initialRunning(before.get('alpha')!, 1);
    expect(running.acl.allowsIngress('web', 'laptop')).toBe(true);
    const { answer, running: next } = decideApply(running, 2, after.get('alpha')!);
    expect(answer.result).toBe('swapped');
    expect(next.acl.allowsIngress('web', 'laptop')).toBe(false);
    expect(next.acl.allowsIngress('web', 'beta')).toBe(true);
  });

  it('swaps a grant that puts a node into an allowed group', () => {
    const after = compiled(replaceIn('policy.yaml', 'members: [beta, laptop]', 'members: [laptop]'));
    expect(classifyChange(before.get('alpha')!, after.get('alpha')!).kind).toBe('swappable');
    expect(classifyChange(after.get('alpha')!, before.get('alpha')!).kind).toBe('swappable');
    expect(classifyChange(after.get('beta')!, before.get('beta')!).kind).toBe('swappable');
  });

  it('swaps a peer moving to another address: only new connections to it need the new one', () => {
    const moved = compiled(replaceIn('nodes/servers.yaml', 'listen: 10.0.0.2:7946', 'listen: 10.0.0.2:7947'));
    expect(classifyChange(before.get('alpha')!, moved.get('alpha')!).kind).toBe('swappable');
    expect(classifyChange(before.get('beta')!, moved.get('beta')!).kind).toBe('restart');
  });

  it('still restarts a node whose own listen address or service changes', () => {
    const moved = compiled(replaceIn('nodes/servers.yaml', 'listen: 10.0.0.1:7946', 'listen: 10.0.0.1:7947'));
    expect(classifyChange(before.get('alpha')!, moved.get('alpha')!)).toMatchObject({ kind: 'restart', changed: expect.arrayContaining(['listen']) });
    const reported = compiled(replaceIn('nodes/servers.yaml', 'port: 443', 'port: 8443'));
    expect(classifyChange(before.get('alpha')!, reported.get('alpha')!)).toEqual({ kind: 'restart', changed: ['services[0].port'] });
    expect(classifyChange(before.get('laptop')!, reported.get('laptop')!).kind).toBe('none');
  });
});
