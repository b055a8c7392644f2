import { ConvergenceState, CredentialState, isLegacyStateWord, LEGACY_STATE_FILTERS, legacyStateReplacement, NodeLifecycle, stateFilterHint } from '#contracts';

export interface StatusFilterFlags {
  /** A lifecycle or convergence word (or one of the older vocabulary). */
  readonly state?: string;
  readonly credential?: string;
  /** Only nodes whose last contact is older than this, or never. */
  readonly contactOlderThanSeconds?: number;
}

export type StatusFilter = { readonly ok: true; readonly query: string; readonly notes: readonly string[] } | { readonly ok: false; readonly error: string };

const STATE_WORDS: readonly string[] = [...NodeLifecycle.options, ...ConvergenceState.options];
const CREDENTIAL_WORDS: readonly string[] = CredentialState.options;

/**
 * `retectl status` flags as the coordinator's node query. A word of the older vocabulary still works,
 * mapped to the filter that gives the same nodes, with a note saying what to write instead: scripts
 * keep running while they are updated. The agent-side words are refused with what to ask instead.
 */
export function statusFilter(flags: StatusFilterFlags): StatusFilter {
  const params: [string, string][] = [];
  const notes: string[] = [];
  let credential = flags.credential;
  if (credential !== undefined && !CREDENTIAL_WORDS.includes(credential))
    return { ok: false, error: `--credential ${credential}: must be one of ${CREDENTIAL_WORDS.join(', ')}` };
  if (flags.state !== undefined) {
    const word = flags.state;
    if (isLegacyStateWord(word)) {
      const mapped: { state?: string; credential?: string } = LEGACY_STATE_FILTERS[word];
      const replacement = legacyStateReplacement(word, 'flag');
      if (mapped.credential && credential !== undefined && credential !== mapped.credential) {
        return { ok: false, error: `--state ${word} means ${replacement}, which contradicts --credential ${credential}` };
      }
      if (mapped.state) params.push(['state', mapped.state]);
      credential = mapped.credential ?? credential;
      notes.push(`--state ${word} is deprecated: the lifecycle words are now ${NodeLifecycle.options.join(', ')}; showing ${replacement}`);
    } else if (STATE_WORDS.includes(word)) {
      params.push(['state', word]);
    } else {
      return { ok: false, error: `--state ${word}: ${stateFilterHint(word, 'flag') ?? `must be one of ${STATE_WORDS.join(', ')}`}` };
    }
  }
  if (credential !== undefined) params.push(['credential', credential]);
  if (flags.contactOlderThanSeconds !== undefined) params.push(['contact_older_than', `${flags.contactOlderThanSeconds}s`]);
  const query = params.length === 0 ? '' : `?${params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;
  return { ok: true, query, notes };
}
