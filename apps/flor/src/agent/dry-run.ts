/**
 * What a dry run says once the bundle verified: `would_apply` exactly when a real pass would install
 * and activate something, i.e. a newer version, or the active one when its apply did not complete
 * (a real pass finishes it). `version` is the verified bundle's, or null on a 304 or with nothing
 * published, when the active set stands.
 */
export function dryRunResult(version: number | null, active: number, activeComplete: boolean): 'would_apply' | 'up_to_date' {
  if (version !== null && version > active) return 'would_apply';
  return active > 0 && !activeComplete ? 'would_apply' : 'up_to_date';
}
