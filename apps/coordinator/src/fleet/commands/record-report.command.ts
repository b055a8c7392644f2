import { Command } from '@nestjs/cqrs';
import type { ReportRequest } from '#contracts';
import type { z } from 'zod';

/** A node says what it runs and how its last pass went. */
export class RecordReportCommand extends Command<void> {
  constructor(
    readonly node: string,
    readonly report: z.infer<typeof ReportRequest>,
  ) {
    super();
  }
}
