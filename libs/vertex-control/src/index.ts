// The vertex side of hot reload; the protocol is in this lib's README.md.
export { classifyChange, isSwappablePath, type ChangeClassification, type ChangeKind } from './classify-change.js';
export { AclTable } from './acl-table.js';
export { decideApply, initialRunning, type ApplyDecision, type RunningConfig } from './apply.decider.js';
export { VertexControl, type VertexControlLog, type VertexControlOptions } from './vertex-control.js';
export { callVertexControl } from './vertex-control.client.js';
export { VertexControlError, type VertexControlErrorCode } from './errors.js';
export {
  MAX_REQUEST_LINE,
  ApplyRequest,
  StatusRequest,
  VertexControlRequest,
  ApplyAnswer,
  ErrorAnswer,
  StatusAnswer,
  VertexControlAnswer,
  VertexControlErrorAnswerCode,
} from './protocol.schema.js';
