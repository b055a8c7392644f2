import { withOneWorkerThread } from './worker-pool.js';

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
});
