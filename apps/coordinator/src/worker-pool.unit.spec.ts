import { startWithOneWorkerThread, withOneWorkerThread } from './worker-pool.js';

describe('withOneWorkerThread', () => {
  const node = '/usr/bin/node';
  const main = '/opt/florete/main.js';

  it('starts serve on the embedded database again with a pool of one, keeping the flags and arguments in their places', () => {
    expect(withOneWorkerThread([node, main, 'serve'], ['--enable-source-maps'], {})).toEqual([node, '--enable-source-maps', '--v8-pool-size=1', main, 'serve']);
    // serve is the command when none is given; an empty DATABASE_URL is unset.
    expect(withOneWorkerThread([node, main], [], { DATABASE_URL: '' })).toEqual([node, '--v8-pool-size=1', main]);
  });

  it('leaves PostgreSQL, the other commands, a pool the operator sized and a debugger alone', () => {
    expect(withOneWorkerThread([node, main, 'serve'], [], { DATABASE_URL: 'postgres://db/florete' })).toBeUndefined();
    expect(withOneWorkerThread([node, main, 'migrate'], [], {})).toBeUndefined();
    expect(withOneWorkerThread([node, main, 'serve'], ['--v8-pool-size=4'], {})).toBeUndefined();
    expect(withOneWorkerThread([node, main, 'serve'], [], { NODE_OPTIONS: '--max-old-space-size=512 --v8_pool_size=2' })).toBeUndefined();
    expect(withOneWorkerThread([node, main, 'serve'], ['--inspect=9229'], {})).toBeUndefined();
    expect(withOneWorkerThread([node, main, 'serve'], [], { NODE_OPTIONS: '--inspect-brk' })).toBeUndefined();
  });

  it('goes on with the pool it has, and says so, when starting again fails', () => {
    const saved = { argv: process.argv, env: process.env.DATABASE_URL };
    process.argv = [process.execPath, '/opt/florete/main.js', 'serve'];
    delete process.env.DATABASE_URL;
    const lines: string[] = [];
    const calls: (readonly string[] | undefined)[] = [];
    try {
      startWithOneWorkerThread(
        ((_file: string, args?: readonly string[]) => {
          calls.push(args);
          throw new Error('EACCES: permission denied');
        }) as typeof process.execve,
        (line) => lines.push(line),
      );
    } finally {
      process.argv = saved.argv;
      if (saved.env !== undefined) process.env.DATABASE_URL = saved.env;
    }
    expect(calls).toHaveLength(1);
    expect(calls[0]).toContain('--v8-pool-size=1');
    expect(lines).toEqual([expect.stringContaining('could not start the runtime again with one V8 worker thread (EACCES: permission denied)')]);
  });
});
