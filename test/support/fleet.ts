import { execFile } from 'node:child_process';
import type { z } from 'zod';
import type { PublishDetail } from '#contracts';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Helpers for the fleet E2E: the built retectl as a real process (as in retectl.e2e.spec.ts) and a rete of real agents. */

export const RETECTL = resolve('dist/apps/retectl/src/main.js');

export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RetectlEnv {
  readonly home: string;
  readonly rete: string;
  readonly coordinator: string;
  readonly token: string;
}

/** `retectl …` in the rete folder, with HOME and XDG_CONFIG_HOME in a temp dir so no operator config leaks in. */
export function retectl(env: RetectlEnv, args: readonly string[]): Promise<CliRun> {
  return new Promise((done) => {
    const vars = {
      PATH: process.env.PATH ?? '',
      HOME: env.home,
      XDG_CONFIG_HOME: join(env.home, '.config'),
      FLORETE_COORDINATOR: env.coordinator,
      FLORETE_TOKEN: env.token,
    };
    execFile(process.execPath, [RETECTL, ...args], { env: vars, cwd: env.rete, timeout: 120_000 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : 1) : 0, stdout, stderr });
    });
  });
}

export interface ReteNode {
  readonly name: string;
  readonly port: number;
}

/** A rete whose agents poll every second with no splay, and no ACL: a node's listen address changes only its own set. */
export function writeFleetRete(dir: string, coordinator: string, nodes: readonly ReteNode[]): void {
  const files: Record<string, string> = {
    'rete.yaml': `mesh:\n  name: fleet\n  coordinator: ${coordinator}\n\ndefaults:\n  sync:\n    poll_interval: 1s\n    splay: 0s\n`,
    'nodes.yaml': `nodes:\n${nodes.map((n) => `  - name: ${n.name}\n    kind: server\n    listen: 127.0.0.1:${n.port}\n`).join('')}`,
  };
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

/** `GET /v1/publishes/{id}` (and `retectl status --publish --json`) as the contract defines it. */
export type PublishView = z.infer<typeof PublishDetail>;

export const byNode = <T extends { node: string }>(items: readonly T[]): Record<string, T> => Object.fromEntries(items.map((i) => [i.node, i]));
