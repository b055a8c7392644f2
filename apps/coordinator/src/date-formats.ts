/**
 * Nest's two logger modules each build an `Intl.DateTimeFormat` for the default locale as they are
 * first imported, for the timestamps of Nest's own console logger. Building one has ICU open the
 * locale's calendar and time zone data and look through the locales it has, which touched pages of
 * the node binary's ICU data all over, held by an idle coordinator for two formatters that never
 * format (bench:rss; the figures are in bench/README.md). The coordinator logs through pino and
 * Nest's console logger never prints, so the entry point imports Nest's common module first with the
 * formatters made meanwhile deferred: each is built the first time one of its methods or properties
 * is read, with the arguments it was made with, and then answers as one built at once would. Every
 * formatter made after that import is built as usual.
 */
type DateTimeFormatConstructor = typeof Intl.DateTimeFormat;

/**
 * A formatter built on first use. One made with arguments the runtime rejects throws at that use
 * rather than where it was made; Nest's two are made with fixed, valid options.
 */
function deferredFormat(Real: DateTimeFormatConstructor, args: ConstructorParameters<DateTimeFormatConstructor>): Intl.DateTimeFormat {
  let real: Intl.DateTimeFormat | undefined;
  const built = () => (real ??= new Real(...args));
  return new Proxy(Object.create(Real.prototype) as Intl.DateTimeFormat, {
    get(_target, key) {
      // A formatter has no properties of its own: a name its prototype lacks (a promise resolved with
      // the formatter reads `then`) is answered without building it.
      if (!(key in Real.prototype)) return undefined;
      const format = built();
      const value: unknown = Reflect.get(format, key, format);
      // The prototype's methods check that they are called on a real formatter.
      return typeof value === 'function' ? value.bind(format) : value;
    },
    has: (_target, key) => Reflect.has(built(), key),
  });
}

/**
 * Runs `load` (the import of the modules that make formatters at their top level) with
 * `Intl.DateTimeFormat` deferring what it builds, and puts the runtime's own back when it settles.
 */
export async function withDeferredDateFormats<T>(load: () => Promise<T>): Promise<T> {
  const Real = Intl.DateTimeFormat;
  // A proxy of the constructor keeps its statics (`supportedLocalesOf`), prototype and name.
  Intl.DateTimeFormat = new Proxy(Real, {
    construct: (_target, args) => deferredFormat(Real, args as ConstructorParameters<DateTimeFormatConstructor>),
    apply: (_target, _this, args) => deferredFormat(Real, args as ConstructorParameters<DateTimeFormatConstructor>),
  });
  try {
    return await load();
  } finally {
    Intl.DateTimeFormat = Real;
  }
}
