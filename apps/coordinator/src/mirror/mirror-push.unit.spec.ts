import { pino } from 'pino';
import { backoffDelay, MirrorPusher } from './mirror-push.js';

const log = pino({ level: 'silent' });
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('mirror push', () => {
  it('backs off exponentially up to a cap', () => {
    expect([0, 1, 2, 3, 10].map((a) => backoffDelay(a, 1000, 60_000))).toEqual([1000, 2000, 4000, 8000, 60_000]);
  });

  it('retries a failed push with backoff until it succeeds, without the caller waiting', async () => {
    let calls = 0;
    const pusher = new MirrorPusher('/nowhere', { url: 'http://remote.invalid/m.git' }, log, {
      baseMs: 10,
      maxMs: 40,
      push: async () => {
        if (++calls < 3) throw new Error('remote down');
      },
    });
    pusher.request();
    expect(calls).toBe(1);
    await tick(150);
    expect({ calls, failures: pusher.failures, pushed: pusher.pushed, lastError: pusher.lastError }).toEqual({
      calls: 3,
      failures: 2,
      pushed: 1,
      lastError: null,
    });
    await pusher.close();
  });

  it('folds requests made during a push into one more push of the latest head', async () => {
    let calls = 0;
    let release!: () => void;
    const pusher = new MirrorPusher('/nowhere', { url: 'http://remote.invalid/m.git' }, log, {
      push: () => {
        calls++;
        return calls === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
      },
    });
    pusher.request();
    pusher.request();
    pusher.request();
    release();
    await tick(10);
    await pusher.idle();
    expect(calls).toBe(2);
    await pusher.close();
  });
});
