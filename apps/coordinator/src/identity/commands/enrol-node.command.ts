import { Command } from '@nestjs/cqrs';
import type { EnrolRequest, OwnedCopy } from '#contracts';
import type { z } from 'zod';
import type { Briefing } from '../briefing.js';

export interface Enrolled {
  readonly node: string;
  /** Shown once: only its hash is stored. */
  readonly credential: string;
  readonly briefing: Briefing;
  /** The recovery copy: what the node last reported installed, and the host resources it owns. */
  readonly installed: string[] | null;
  readonly owned: OwnedCopy | null;
}

/** An agent adopts a node with a single-use enrolment token; the token is the authentication. */
export class EnrolNodeCommand extends Command<Enrolled> {
  constructor(readonly request: z.infer<typeof EnrolRequest>) {
    super();
  }
}
