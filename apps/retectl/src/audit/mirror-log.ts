import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connection } from '../config.js';
import { RetectlError } from '../errors.js';

/** A mirror commit as its trailers record it: the ledger position it was written for, and the chain hash there. */
export interface MirrorCommit {
  readonly commit: string;
  readonly position: number;
  readonly hash: string;
}

function git(args: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { env, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        return reject(new RetectlError('io', 'the git CLI is needed to read the audit mirror (install git, or pass --no-mirror)'));
      reject(new RetectlError('io', `git ${args[0] === '--git-dir' ? args[2] : args[0]} failed: ${stderr.trim().split('\n').pop() ?? err.message}`));
    });
  });
}

/**
 * The git CLI, never prompting, with the token as an HTTP header taken from the environment (not
 * argv, which other users of the machine can read) and the coordinator's CA when one is named. The
 * CA goes in both as http.sslCAInfo and as GIT_SSL_CAINFO: git lets that variable beat the config,
 * and machines that set it to the system bundle would otherwise refuse the coordinator retectl
 * itself was told to trust.
 */
function gitEnv(connection: Connection): NodeJS.ProcessEnv {
  const config: [string, string][] = [['http.extraHeader', `Authorization: Bearer ${connection.token}`]];
  if (connection.caFile) config.push(['http.sslCAInfo', connection.caFile]);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_COUNT: String(config.length),
  };
  if (connection.caFile) env.GIT_SSL_CAINFO = connection.caFile;
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/** The mirror's first-parent history, oldest first, read from a local clone (a bare one or a work tree). */
export async function readMirrorLog(gitdir: string, env: NodeJS.ProcessEnv = process.env): Promise<MirrorCommit[]> {
  const ref = (await git(['--git-dir', gitdir, 'for-each-ref', '--format=%(refname)', 'refs/heads/main', 'refs/remotes/origin/main'], env))
    .split('\n')
    .filter(Boolean)[0];
  if (!ref) return [];
  const format = '%H%x1f%(trailers:key=Ledger-Position,valueonly,separator=%x2C)%x1f%(trailers:key=Ledger-Hash,valueonly,separator=%x2C)%x1e';
  const log = await git(['--git-dir', gitdir, 'log', '--first-parent', '--reverse', `--format=${format}`, ref], env);
  return log
    .split('\x1e')
    .map((r) => r.trim())
    .filter(Boolean)
    .map((record) => {
      const [commit, position, hash] = record.split('\x1f');
      if (!/^(0|[1-9][0-9]{0,15})$/.test(position ?? '') || !/^[0-9a-f]{64}$/.test(hash ?? '')) {
        throw new RetectlError('bad_response', `mirror commit ${commit} has no single Ledger-Position and Ledger-Hash trailer`);
      }
      return { commit, position: Number(position), hash };
    });
}

/** Clones the coordinator's audit mirror (git's dumb HTTP protocol) into a temporary folder, reads it and removes it. */
export async function fetchMirrorLog(connection: Connection): Promise<MirrorCommit[]> {
  const dir = mkdtempSync(join(tmpdir(), 'retectl-mirror-'));
  try {
    const env = gitEnv(connection);
    await git(['clone', '--bare', '--quiet', `${connection.url.replace(/\/$/, '')}/audit.git`, join(dir, 'audit.git')], env);
    return await readMirrorLog(join(dir, 'audit.git'), env);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
