import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { cosignCheckpoint, nodeWitnessName, rawPublicKey, TREE_ORIGIN_SUFFIX } from '#bundle';
import type { AgentIdentity, HeldTreeCheckpoint, ReportRequest } from '#contracts';
import { writeJsonAtomic } from '#runtime';

/**
 * The node as a witness of its ledger (C2SP tlog-cosignature): an Ed25519 key of its own, made for
 * each enrolment and kept in the state dir (0600), whose public half the coordinator records in the
 * ledger; with it the agent cosigns the newest tree checkpoint it verified, and its reports carry
 * that cosignature. An auditor then needs no word of the coordinator's to know what the fleet saw.
 */
export const WitnessKeyFile = z.strictObject({
  /** The enrolment the key belongs to: a new enrolment makes a new key. */
  enrolled_at: z.string(),
  /** PKCS#8 PEM. */
  private_key: z.string(),
  /** The raw 32-byte public key, base64, as the coordinator records it. */
  public_key: z.string(),
  /** Whether the coordinator has recorded it (with the enrolment, or by `PUT /v1/nodes/{node}/witness-key`). */
  registered: z.boolean(),
});
export type WitnessKeyFile = z.infer<typeof WitnessKeyFile>;

export const WITNESS_FILE = 'witness.json';

/** A new witness key: the PEM to keep and the public half to register. */
export function newWitnessKey(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), publicKey: rawPublicKey(publicKey).toString('base64') };
}

export function readWitnessFile(stateDir: string): WitnessKeyFile | null {
  const path = join(stateDir, WITNESS_FILE);
  if (!existsSync(path)) return null;
  const parsed = WitnessKeyFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  return parsed.success ? parsed.data : null;
}

export function writeWitnessFile(stateDir: string, file: WitnessKeyFile): void {
  writeJsonAtomic(join(stateDir, WITNESS_FILE), file, 0o600);
}

/** The witness name a node's cosignatures carry: `<ledger origin>/node/<node>`, the ledger's origin read from the tree checkpoint's. */
export function witnessNameFor(treeOrigin: string, node: string): string {
  return nodeWitnessName(treeOrigin.endsWith(TREE_ORIGIN_SUFFIX) ? treeOrigin.slice(0, -TREE_ORIGIN_SUFFIX.length) : treeOrigin, node);
}

/**
 * The agent's side of witnessing: registers its key once a process when the coordinator has not
 * recorded it, and cosigns the newest tree checkpoint it verified, once a checkpoint (the line is
 * kept, so a report repeats it rather than signing again with a new time).
 */
export class Witness {
  private tried = false;
  private signed: { note: string; line: string } | null = null;
  private key: KeyObject | null = null;

  constructor(
    private readonly stateDir: string,
    private readonly identity: AgentIdentity,
    private readonly now: () => Date,
  ) {}

  /** This enrolment's key file, made (unregistered) when there is none. */
  private file(): WitnessKeyFile {
    const held = readWitnessFile(this.stateDir);
    if (held && held.enrolled_at === this.identity.enrolled_at) return held;
    const made = newWitnessKey();
    const file = { enrolled_at: this.identity.enrolled_at, private_key: made.privateKey, public_key: made.publicKey, registered: false };
    writeWitnessFile(this.stateDir, file);
    return file;
  }

  /**
   * Registers the key when it is not yet, once a process: `register` sends it and says whether the
   * coordinator recorded it (false for one that predates witness keys: tried again next start).
   */
  async ensureRegistered(register: (publicKey: string) => Promise<boolean>): Promise<void> {
    if (this.tried) return;
    this.tried = true;
    const file = this.file();
    if (file.registered) return;
    if (await register(file.public_key)) writeWitnessFile(this.stateDir, { ...file, registered: true });
  }

  /** What a report adds: the held tree checkpoint and this node's cosignature of it; nothing until the key is registered. */
  cosigned(held: HeldTreeCheckpoint | null): Pick<ReportRequest, 'cosigned_checkpoint' | 'cosignature'> {
    if (!held) return {};
    const file = readWitnessFile(this.stateDir);
    if (!file || !file.registered || file.enrolled_at !== this.identity.enrolled_at) return {};
    if (this.signed?.note !== held.note) {
      this.key ??= createPrivateKey(file.private_key);
      const line = cosignCheckpoint(held.note, witnessNameFor(held.origin, this.identity.node), this.key, Math.floor(this.now().getTime() / 1000));
      this.signed = { note: held.note, line };
    }
    return { cosigned_checkpoint: this.signed.note, cosignature: this.signed.line };
  }
}
