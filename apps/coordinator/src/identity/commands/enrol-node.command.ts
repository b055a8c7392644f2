import { Command } from '@nestjs/cqrs';
import type { EnrolRequest } from '#contracts';
import type { z } from 'zod';
import type { Briefing } from '../briefing.js';

export interface Enrolled {
  readonly node: string;
  /** Shown once: only its hash is stored. */
  readonly credential: string;
  readonly briefing: Briefing;
  readonly installed: unknown;
}

/** An agent adopts a node with a single-use enrolment token; the token is the authentication. */
export class EnrolNodeCommand extends Command<Enrolled> {
  constructor(readonly request: z.infer<typeof EnrolRequest>) {
    super();
  }
}
