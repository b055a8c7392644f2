/**
 * Node's `http` module exports three getters (`WebSocket`, `CloseEvent`, `MessageEvent`, Node.js 22
 * and later) that load the runtime's fetch and WebSocket implementation, undici, when first read
 * (what it holds resident: bench/README.md, bench:rss). An ES module import of `http` builds the module's ES
 * namespace by reading every export once, and the framework imports it that way (Nest's router and its
 * Fastify adapter), so the coordinator held undici from start-up though it uses neither. The names of
 * a built-in module's ES namespace are fixed when it is first imported (`syncBuiltinESMExports` never
 * adds one), so the entry point builds it first, with those three set aside for the moment: every
 * other export is there as before, and `require('node:http')` keeps all of them, lazy as they were.
 * An ES module that imports one of the three by name would fail to link; none of the coordinator's does.
 */
const LOADS_UNDICI = ['WebSocket', 'CloseEvent', 'MessageEvent'];

/** Call before anything imports `http` or `node:http` as an ES module. */
export async function importHttpWithoutUndici(): Promise<void> {
  const http = process.getBuiltinModule('node:http') as unknown as Record<string, unknown>;
  const aside = LOADS_UNDICI.flatMap((name) => {
    const property = Object.getOwnPropertyDescriptor(http, name);
    return property?.get && property.configurable ? [[name, property] as const] : [];
  });
  for (const [name] of aside) delete http[name];
  try {
    await import('node:http');
  } finally {
    for (const [name, property] of aside) Object.defineProperty(http, name, property);
  }
}
