import type { Kysely } from 'kysely';
import { sha256Hex, signTrustDocument } from '#bundle';
import type { KeyChangeResponse } from '#contracts';
import type { Database } from '../db/index.js';
import type { SigningKeyStore } from '../core/index.js';
import { DomainError } from '../common/index.js';
import { appendUnderLock, lockLedger, nextRecordedAt, readStreamRevision } from '../ledger/index.js';
import { nextTrust, type TrustChange } from './trust.decider.js';
import { insertTrustVersion } from './trust.repository.js';
import { resignHeads } from './resign-heads.js';
import { checkpointSigner, signingTrust } from './signing-trust.js';

export type KeyRequest = { readonly kind: 'rotate' } | { readonly kind: 'revoke'; readonly kid: string };

/**
 * `keys rotate` and `keys revoke`, one transaction under the ledger lock: the next trust version
 * signed by the current signer, its ledger event, every node head moved to the new signer (so
 * no node is asked to accept the old key for new content; each bundle is signed when next fetched) and a checkpoint. A new key goes into the
 * key file first and signs only once this commits.
 */
export async function changeKeys(db: Kysely<Database>, keys: SigningKeyStore, request: KeyRequest, actor: string): Promise<KeyChangeResponse> {
  await keys.reloadIfChanged();
  const before = await db.transaction().execute(async (trx) => {
    await lockLedger(trx);
    return signingTrust(trx, keys);
  });
  const needsKey = request.kind === 'rotate' || (before.signingKid === request.kid && !before.doc.revoked.includes(request.kid));
  const newKid = needsKey ? await keys.addKey() : null;
  const result = await db.transaction().execute(async (trx) => {
    const { result: changed } = await appendUnderLock(trx, checkpointSigner(keys), async ({ trust: prev }) => {
      let change: TrustChange;
      if (request.kind === 'rotate') change = { kind: 'rotate', newKey: keys.publicKey(newKid!) };
      else {
        const replacing = prev.signingKid === request.kid;
        if (replacing && !newKid) throw new DomainError('ledger_busy', 'the signing key changed while revoking: try again');
        change = { kind: 'revoke', kid: request.kid, newKey: replacing ? keys.publicKey(newKid!) : null, known: keys.has(request.kid) };
      }
      const at = await nextRecordedAt(trx);
      const decision = nextTrust(prev.doc, prev.digest, change, at.toISOString());
      const document = signTrustDocument(decision.doc, keys.byKid(decision.signedBy));
      const digest = sha256Hex(document);
      const version = decision.doc.version;
      await insertTrustVersion(trx, { version, signingKid: decision.signingKid, signedBy: decision.signedBy, document, digest, at });
      const resigned = await resignHeads(trx, decision.signingKid);
      const stream = 'identity:keys' as const;
      const revision = (await readStreamRevision(trx, stream)) + 1;
      const common = { signer: decision.signingKid, trust_version: version, trust_digest: digest, resigned };
      const event =
        request.kind === 'rotate'
          ? { type: 'signing_key_rotated' as const, stream, revision, data: { kid: decision.signingKid, ...common } }
          : { type: 'signing_key_revoked' as const, stream, revision, data: { kid: request.kid, ...common } };
      return {
        inputs: [{ event, meta: { actor } }],
        recordedAt: at,
        trustAfter: { version, signingKid: decision.signingKid, doc: decision.doc, document, digest },
        result: { kid: decision.signingKid, trust_version: version, revoked: [...decision.doc.revoked], resigned },
      };
    });
    return changed;
  });
  await keys.settle(result.kid, result.revoked);
  return result;
}
