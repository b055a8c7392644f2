// The rete compiler: validate, compile and plan an operator's YAML. Pure: sources in, data out.
export { cmp, formatDiagnostic, sortDiagnostics, placeText, type Diagnostic, type Place } from './diagnostics.js';
export { parseFile, type Source, type ParsedFile, type ParseCache } from './parse-file.js';
export { validateRete, nodeSync, type Validation, type SyncDecl } from './validate.js';
export { noSources, type ReadSource, type SourceFile } from './resolve-resources.js';
export type {
  Rete,
  RolloutModel,
  ReteNodeModel,
  AclRuleModel,
  AclSource,
  SyncSeconds,
  NodeResources,
  FileResourceModel,
  PackageResourceModel,
} from './model.js';
export { compileNodes, compileRete, type ArtifactBytes, type CompiledTree } from './compile.js';
export { compiledSetDigests, digestsJson, digestsJsonText } from './set-digests.js';
export { decodeUtf8 } from './utf8.js';
export { localEdits, editFlor, editAgent, editedWarnings, type LocalEdits, type KeptDiagnostic } from './local-edits.js';
export { bytesOf, diffTrees, differingArtifacts, sameBytes, type TreeChange } from './tree-diff.js';
export {
  planPublish,
  nodesToInspect,
  localSetDigest,
  type Plan,
  type PlanEntry,
  type HeadSummary,
  type ArtifactDigests,
  type ResourceSides,
  type BriefingFailure,
  type IneligibleEntry,
} from './plan.js';
export { diffResources, formatResourceChange, artifactsText, type ResourceChange, type FileAttributeChange } from './resource-changes.js';
export { selectNodes, type NodeSelector, type SelectorKey, type Selectable, type UnknownTarget } from './select-nodes.js';
export { EXAMPLE_RETE } from './example.js';
export { namedTags, nodeLabels } from './labels.js';
