import { formatDiagnostic, validateRete } from '#rete';
import { RetectlError } from '../errors.js';
import { note, out, outJson, plural } from '../output.js';
import { readSources, sourceReader } from '../rete-dir.js';

export interface ValidateOptions {
  readonly dir: string;
  readonly json?: boolean;
}

/** Reports every error and warning at once; fails when there is at least one error. */
export async function run(options: ValidateOptions): Promise<void> {
  const { rete, diagnostics } = validateRete(readSources(options.dir), sourceReader(options.dir));
  const errors = diagnostics.filter((d) => d.severity === 'error');
  const warnings = diagnostics.filter((d) => d.severity === 'warning');
  if (options.json) {
    outJson({ ok: rete !== undefined, errors, warnings });
  } else {
    for (const d of diagnostics) note(formatDiagnostic(d));
  }
  if (!rete) throw new RetectlError('invalid_rete', `the rete does not validate: ${plural(errors.length, 'error')}, ${plural(warnings.length, 'warning')}`);
  if (!options.json)
    out(
      `ok: ${plural(rete.nodes.length, 'node')}, ${plural(rete.groups.size, 'group')}, ${plural(rete.acl.length, 'ACL rule')}, ${plural(warnings.length, 'warning')}`,
    );
}
