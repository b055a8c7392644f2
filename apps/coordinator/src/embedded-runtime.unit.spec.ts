import { embeddedRuntime, startEmbeddedRuntime } from './embedded-runtime.js';

describe('embeddedRuntime', () => {
  const node = '/usr/bin/node';
  const main = '/opt/florete/main.js';
  const tunables = 'glibc.malloc.mmap_threshold=32768';

  it('starts serve on the embedded database again with a pool of one, V8 working on the main thread and the allocator tuned, keeping the flags, arguments and environment', () => {
    expect(embeddedRuntime([node, main, 'serve'], ['--enable-source-maps'], { FLORETE_DATA: '/var/lib/florete' })).toEqual({
      args: [node, '--enable-source-maps', '--v8-pool-size=1', '--single-threaded', main, 'serve'],
      env: { FLORETE_DATA: '/var/lib/florete', GLIBC_TUNABLES: tunables },
    });
    // serve is the command when none is given; an empty DATABASE_URL is unset.
    expect(embeddedRuntime([node, main], [], { DATABASE_URL: '' })).toEqual({
      args: [node, '--v8-pool-size=1', '--single-threaded', main],
      env: { DATABASE_URL: '', GLIBC_TUNABLES: tunables },
    });
  });

  it('keeps a GLIBC_TUNABLES the operator set, even one that says nothing of malloc, or an empty one', () => {
    for (const given of ['glibc.pthread.rseq=0', ''])
      expect(embeddedRuntime([node, main, 'serve'], [], { GLIBC_TUNABLES: given })).toEqual({
        args: [node, '--v8-pool-size=1', '--single-threaded', main, 'serve'],
        env: { GLIBC_TUNABLES: given },
      });
  });

  it('leaves PostgreSQL, the other commands, a pool the operator sized and a debugger alone', () => {
    // The second start, which has the pool flag and the tunables, goes on.
    const again = embeddedRuntime([node, main, 'serve'], [], {})!;
    expect(again.args).toEqual([node, '--v8-pool-size=1', '--single-threaded', main, 'serve']);
    expect(embeddedRuntime([node, main, 'serve'], ['--v8-pool-size=1', '--single-threaded'], again.env)).toBeUndefined();
    expect(embeddedRuntime([node, main, 'serve'], ['--v8-pool-size=4'], {})).toBeUndefined();
    expect(embeddedRuntime([node, main, 'serve'], [], { NODE_OPTIONS: '--max-old-space-size=512 --v8_pool_size=2' })).toBeUndefined();
    expect(embeddedRuntime([node, main, 'serve'], [], { DATABASE_URL: 'postgres://db/florete' })).toBeUndefined();
    expect(embeddedRuntime([node, main, 'migrate'], [], {})).toBeUndefined();
    expect(embeddedRuntime([node, main, 'serve'], ['--inspect=9229'], {})).toBeUndefined();
    expect(embeddedRuntime([node, main, 'serve'], [], { NODE_OPTIONS: '--inspect-brk' })).toBeUndefined();
  });

  it('goes on as it is, and says so, when starting again fails', () => {
    const saved = { argv: process.argv, url: process.env.DATABASE_URL, tunables: process.env.GLIBC_TUNABLES };
    process.argv = [process.execPath, '/opt/florete/main.js', 'serve'];
    delete process.env.DATABASE_URL;
    delete process.env.GLIBC_TUNABLES;
    const lines: string[] = [];
    const calls: { args?: readonly string[]; env?: NodeJS.ProcessEnv; own?: string }[] = [];
    try {
      startEmbeddedRuntime(
        ((_file: string, args?: readonly string[], env?: NodeJS.ProcessEnv) => {
          // The process's own environment as execve is called: the tunable goes only to the new start.
          calls.push({ args, env, own: process.env.GLIBC_TUNABLES });
          throw new Error('EACCES: permission denied');
        }) as typeof process.execve,
        (line) => lines.push(line),
      );
    } finally {
      process.argv = saved.argv;
      if (saved.url !== undefined) process.env.DATABASE_URL = saved.url;
      if (saved.tunables !== undefined) process.env.GLIBC_TUNABLES = saved.tunables;
    }
    expect(calls).toHaveLength(1);
    expect(calls[0].args).toContain('--v8-pool-size=1');
    expect(calls[0].env?.GLIBC_TUNABLES).toBe(tunables);
    expect(calls[0].own).toBeUndefined();
    expect(lines).toEqual([expect.stringContaining("could not start the runtime again with the embedded database's settings (EACCES: permission denied)")]);
  });
});
