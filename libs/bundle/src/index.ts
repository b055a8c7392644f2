export { canonicalJson, canonicalPretty } from './canonical-json.js';
export { sha256Hex, setDigest, EMPTY_SET_DIGEST, type ArtifactRef } from './digest.js';
export {
  signBundle,
  verifyBundleSignature,
  keyThumbprint,
  BundleVerifyError,
  BUNDLE_TYP,
  type SigningKey,
  type BundleVerifyFailure,
} from './jws.js';
