// autocannon 9 ships no typings: the subset the benchmarks use.
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      amount?: number;
      method?: string;
      headers?: Record<string, string>;
      pipelining?: number;
      /** Seconds before a request counts as a timeout. */
      timeout?: number;
      workers?: number;
      title?: string;
    }

    /** Histogram summary; percentile keys are `p50`, `p97_5`, `p99`, `p99_9` … */
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
      [percentile: string]: number;
    }

    interface Result {
      title?: string;
      url: string;
      connections: number;
      /** Seconds actually run. */
      duration: number;
      /** Socket errors, timeouts included. */
      errors: number;
      timeouts: number;
      mismatches: number;
      non2xx: number;
      resets: number;
      '1xx': number;
      '2xx': number;
      '3xx': number;
      '4xx': number;
      '5xx': number;
      statusCodeStats: Record<string, { count: number }>;
      /** Milliseconds. */
      latency: Histogram & { totalCount: number };
      /** Per-second samples of completed requests. */
      requests: Histogram & { sent: number };
      throughput: Histogram;
    }

    interface Instance extends PromiseLike<Result> {
      stop(): void;
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance;
  export default autocannon;
}
