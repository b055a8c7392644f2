import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { ReportRequest } from '#contracts';
import { parseInput, Access } from '../common/index.js';
import { Metrics } from '../core/index.js';
import { RecordReportCommand } from './commands/record-report.command.js';

@Controller('v1/nodes')
export class ReportsController {
  constructor(
    private readonly commands: CommandBus,
    private readonly metrics: Metrics,
  ) {}

  @Post(':node/reports')
  @HttpCode(204)
  @Access('node')
  async report(@Param('node') node: string, @Body() body: unknown): Promise<void> {
    await this.commands.execute(new RecordReportCommand(node, parseInput(ReportRequest, body, 'body')));
    this.metrics.reports++;
  }
}
