/**
 * Calls `fn` on each item in turn, with at most `limit` calls in flight, and returns their results in
 * the items' order. Once a call fails no further call starts; the ones already in flight are waited
 * for, and then the first failure is thrown, so nothing this started is still running when it returns.
 */
export async function eachInFlight<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`at most ${limit} calls in flight: expected a whole number of at least 1`);
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i]);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.error;
  return results;
}
