export { spkiPin } from './pin.js';
export { isLoopbackHost, cleartextRefusal } from './cleartext.js';
export { readCaFile, systemTrust, trustAnchors, CaFileError, SYSTEM_BUNDLES, type TrustAnchors } from './trust.js';
export {
  VerifyingAgent,
  TlsRefusedError,
  judgePeer,
  type TrustPolicy,
  type PeerFacts,
  type TlsRefusalCode,
  type VerifyingAgentOptions,
  type HandshakeCounts,
} from './verifying-agent.js';
