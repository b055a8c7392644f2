import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { HealthCheck } from '#contracts';

/** What a revert's reason keeps of a check's output: its last bytes, where the error usually is. */
const OUTPUT_TAIL = 2048;

export type CheckResult = { readonly ok: true } | { readonly ok: false; readonly failure: string };

/** Runs the checks in order and stops at the first that fails: its name, kind and output are the failure. */
export async function runHealthChecks(checks: readonly HealthCheck[], env: NodeJS.ProcessEnv = process.env): Promise<CheckResult> {
  for (const check of checks) {
    const failure = await runOne(check, env).catch((err: Error) => err.message);
    if (failure !== null) return { ok: false, failure: `health check "${check.name}" (${describe(check)}) failed: ${failure}` };
  }
  return { ok: true };
}

function describe(c: HealthCheck): string {
  switch (c.kind) {
    case 'command':
      return `command ${JSON.stringify(c.command)}`;
    case 'tcp':
      return `tcp ${c.address}`;
    case 'http':
      return `GET ${c.url}`;
  }
}

/** Null when the check passed; otherwise what went wrong. */
function runOne(c: HealthCheck, env: NodeJS.ProcessEnv): Promise<string | null> {
  switch (c.kind) {
    case 'command':
      return command(c.command, c.timeout * 1000, env);
    case 'tcp':
      return tcp(c.address, c.timeout * 1000);
    case 'http':
      return http(c.url, c.expect_status, c.timeout * 1000);
  }
}

function command(cmd: string, timeoutMs: number, env: NodeJS.ProcessEnv): Promise<string | null> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', cmd], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    const collect = (b: Buffer) => (out = (out + b.toString('utf8')).slice(-OUTPUT_TAIL));
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      // The whole group: a shell's children must not outlive the check.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve(`could not start: ${err.message}`);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const output = out.trim() === '' ? '' : `: ${out.trim()}`;
      if (timedOut) resolve(`timed out after ${timeoutMs / 1000}s${output}`);
      else if (code === 0) resolve(null);
      else resolve(`${code === null ? `killed by ${signal}` : `exit ${code}`}${output}`);
    });
  });
}

function tcp(address: string, timeoutMs: number): Promise<string | null> {
  const cut = address.lastIndexOf(':');
  const host = address.slice(0, cut).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(cut + 1));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (result: string | null) => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done(`no connection within ${timeoutMs / 1000}s`));
    socket.once('connect', () => done(null));
    socket.once('error', (err) => done(err.message));
  });
}

function http(url: string, expect: number, timeoutMs: number): Promise<string | null> {
  const u = new URL(url);
  const send = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    // A liveness probe of a local service, often on a self-signed certificate: whether it answers
    // is the question, not who it is.
    const req = send(u, { method: 'GET', timeout: timeoutMs, ...(u.protocol === 'https:' ? { rejectUnauthorized: false } : {}) }, (res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body = (body + b.toString('utf8')).slice(0, OUTPUT_TAIL)));
      res.on('end', () => resolve(res.statusCode === expect ? null : `status ${res.statusCode}, expected ${expect}${body.trim() ? `: ${body.trim()}` : ''}`));
      res.on('error', (err) => resolve(err.message));
    });
    req.once('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs / 1000}s`)));
    req.once('error', (err) => resolve(err.message));
    req.end();
  });
}
