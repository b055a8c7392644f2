import { createHash, generateKeyPairSync, verify } from 'node:crypto';
import { signNote } from './checkpoint.js';
import { cosignCheckpoint, cosignerKeyId, nodeWitnessName, parseCosignatureLine, rawPublicKey, verifyCosignature } from './cosignature.js';

const origin = 'florete.ledger/3b9d0c41a7e2f566/tree';
const body = `${origin}\n20852163\n${Buffer.alloc(32, 7).toString('base64')}\ntime 2026-12-02T00:00:00.000Z\ntrust 1\nchain ${Buffer.alloc(32, 9).toString('base64')}\n`;
const log = generateKeyPairSync('ed25519');
const note = signNote(body, origin, { kid: 'k1', privateKey: log.privateKey });
const node = generateKeyPairSync('ed25519');
const name = nodeWitnessName('florete.ledger/3b9d0c41a7e2f566', 'web-1');
const witness = { name, publicKey: rawPublicKey(node.publicKey).toString('base64') };

describe('checkpoint cosignatures (C2SP tlog-cosignature, Ed25519 cosignature/v1)', () => {
  it('are the spec bytes: key id ‖ big-endian timestamp ‖ an Ed25519 signature over the header, time line and whole body', () => {
    const line = cosignCheckpoint(note, name, node.privateKey, 1679315147);
    const m = /^— (\S+) (\S+)$/.exec(line)!;
    expect(m[1]).toBe(name);
    const bytes = Buffer.from(m[2], 'base64');
    expect(bytes).toHaveLength(76);
    // Derived here from the spec's text, not from the module's helpers.
    const raw = Buffer.from((node.publicKey.export({ format: 'jwk' }) as { x: string }).x, 'base64url');
    const keyId = createHash('sha256')
      .update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.from([4]), raw]))
      .digest()
      .subarray(0, 4);
    expect(bytes.subarray(0, 4)).toEqual(keyId);
    expect(bytes.readBigUInt64BE(4)).toBe(1679315147n);
    const message = Buffer.from(`cosignature/v1\ntime 1679315147\n${body}`);
    expect(verify(null, message, node.publicKey, bytes.subarray(12))).toBe(true);
    expect(cosignerKeyId(name, raw)).toBe(keyId.readUInt32BE(0));
  });

  it('verify for the witness that made them, whatever other signatures the note carries', () => {
    const line = cosignCheckpoint(note, name, node.privateKey, 1700000000);
    expect(verifyCosignature(note, line, witness)).toEqual({ name, time: 1700000000 });
    expect(verifyCosignature(`${note}${line}\n`, line, witness)).toEqual({ name, time: 1700000000 });
    expect(parseCosignatureLine(line)).toMatchObject({ name, time: 1700000000 });
  });

  it('do not verify for another body, another time, another key or another name, and never throw', () => {
    const line = cosignCheckpoint(note, name, node.privateKey, 1700000000);
    const otherBody = signNote(body.replace('20852163', '20852164'), origin, { kid: 'k1', privateKey: log.privateKey });
    expect(verifyCosignature(otherBody, line, witness)).toBeNull();
    const bytes = Buffer.from(line.split(' ')[2], 'base64');
    bytes.writeBigUInt64BE(1700000001n, 4);
    expect(verifyCosignature(note, `— ${name} ${bytes.toString('base64')}`, witness)).toBeNull();
    const stranger = generateKeyPairSync('ed25519');
    expect(verifyCosignature(note, line, { name, publicKey: rawPublicKey(stranger.publicKey).toString('base64') })).toBeNull();
    // The stranger's own line under the node's name: its key id is not the node's.
    expect(verifyCosignature(note, cosignCheckpoint(note, name, stranger.privateKey, 1700000000), witness)).toBeNull();
    expect(verifyCosignature(note, line, { ...witness, name: nodeWitnessName('florete.ledger/3b9d0c41a7e2f566', 'web-2') })).toBeNull();
    // The log's own signature line is a note signature, not a cosignature.
    const logLine = note.trimEnd().split('\n').pop()!;
    expect(parseCosignatureLine(logLine)).toBeNull();
    for (const junk of ['', '— x', `— ${name} !!!`, `— ${name} AAAA`]) expect(verifyCosignature(note, junk, witness)).toBeNull();
    expect(verifyCosignature('not a note', line, witness)).toBeNull();
  });
});
