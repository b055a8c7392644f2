import { withDeferredDateFormats } from './date-formats.js';

describe('withDeferredDateFormats', () => {
  const Runtime = Intl.DateTimeFormat;
  let built: unknown[][];
  beforeEach(() => {
    // The runtime's constructor, counting what it builds, stands where the deferral finds it.
    built = [];
    Intl.DateTimeFormat = new Proxy(Runtime, {
      construct: (target, args) => {
        built.push(args);
        return Reflect.construct(target, args) as object;
      },
    });
  });
  afterEach(() => {
    Intl.DateTimeFormat = Runtime;
  });

  const options: Intl.DateTimeFormatOptions = { year: 'numeric', month: '2-digit', day: '2-digit', hour: 'numeric', minute: 'numeric', timeZone: 'UTC' };
  const at = Date.UTC(2026, 11, 5, 7, 55, 21);

  it('builds a formatter made while the modules load only when it is first used, and it answers as one built at once', async () => {
    const made = await withDeferredDateFormats(async () => [new Intl.DateTimeFormat('en-GB', options), Intl.DateTimeFormat('de-DE', options)]);
    expect(built).toEqual([]);
    const direct = new Runtime('en-GB', options);
    expect(made[0].format(at)).toBe(direct.format(at));
    expect(built).toEqual([['en-GB', options]]);
    // `format` read off the formatter works unbound, as the runtime's does.
    const { format } = made[0];
    expect([at, at + 1000].map(format)).toEqual([at, at + 1000].map(direct.format));
    expect(made[0].formatToParts(at)).toEqual(direct.formatToParts(at));
    expect(made[0].resolvedOptions()).toEqual(direct.resolvedOptions());
    expect(made[0]).toBeInstanceOf(Runtime);
    expect(made[1].format(at)).toBe(new Runtime('de-DE', options).format(at));
    // Each deferred formatter is built once, however often it is used.
    made[0].format(at);
    expect(built).toHaveLength(2);
  });

  it('puts the runtime constructor back when the load settles, whether it loaded or failed', async () => {
    const counting = Intl.DateTimeFormat;
    await withDeferredDateFormats(async () => {
      expect(Intl.DateTimeFormat).not.toBe(counting);
      // The constructor's statics stay reachable meanwhile.
      expect(Intl.DateTimeFormat.supportedLocalesOf(['en-GB'])).toEqual(['en-GB']);
    });
    expect(Intl.DateTimeFormat).toBe(counting);
    await expect(
      withDeferredDateFormats(async () => {
        throw new Error('the module failed to load');
      }),
    ).rejects.toThrow('the module failed to load');
    expect(Intl.DateTimeFormat).toBe(counting);
    new Intl.DateTimeFormat('en-GB', options);
    expect(built).toHaveLength(1);
  });

  it('reports options the runtime rejects when the formatter is first used', async () => {
    const bad = await withDeferredDateFormats(async () => new Intl.DateTimeFormat('en-GB', { timeZone: 'Nowhere/Atlantis' }));
    // Resolving the load's promise with it read its `then`, which does not build it.
    expect(built).toEqual([]);
    expect(() => bad.format(at)).toThrow(RangeError);
  });
});
