import type { FlorAcl } from '#contracts';

/**
 * The allow lists and the peers they name, as lookup tables. Built completely in the constructor and
 * never changed after: a swap builds a new table and replaces the one reference to it, so a reader
 * holding a table always sees one whole version of the lists and of the peers that go with them.
 */
export class AclTable {
  readonly #ingress: ReadonlyMap<string, ReadonlySet<string>>;
  readonly #egress: ReadonlyMap<string, ReadonlySet<string>>;
  readonly #peers: ReadonlyMap<string, string>;

  private constructor(ingress: Map<string, Set<string>>, egress: Map<string, Set<string>>, peers: Map<string, string>) {
    this.#ingress = ingress;
    this.#egress = egress;
    this.#peers = peers;
    Object.freeze(this);
  }

  static from(acl: FlorAcl): AclTable {
    const ingress = new Map<string, Set<string>>();
    for (const [service, peers] of Object.entries(acl.ingress)) ingress.set(service, new Set(peers));
    const egress = new Map<string, Set<string>>();
    for (const { node, service } of acl.egress) {
      const services = egress.get(node) ?? new Set<string>();
      services.add(service);
      egress.set(node, services);
    }
    return new AclTable(ingress, egress, new Map(acl.peers.map((p) => [p.node, p.listen])));
  }

  /** May `peer` open a new connection to this node's `service`? Unlisted services admit nobody. */
  allowsIngress(service: string, peer: string): boolean {
    return this.#ingress.get(service)?.has(peer) ?? false;
  }

  /** May this node open a connection to `service` on `node`? */
  allowsEgress(node: string, service: string): boolean {
    return this.#egress.get(node)?.has(service) ?? false;
  }

  /** Where to reach `node` for a new connection; undefined once it is no peer of this node. */
  peerAddress(node: string): string | undefined {
    return this.#peers.get(node);
  }
}
