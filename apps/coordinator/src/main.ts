#!/usr/bin/env node
// On the embedded database, serve starts the runtime again with one V8 worker thread and the C
// library allocator's mmap threshold held low, before anything else (embedded-runtime.ts). Then the
// young generation is held small and V8's compilers off before anything else is loaded, compiling
// the modules included; the commands come after, by a dynamic import (see young-generation.ts and
// compiler-tiers.ts). Node's http module and Nest's common module are imported first, each so that
// it leaves out what the coordinator does not use (http-namespace.ts, date-formats.ts).
import { startEmbeddedRuntime } from './embedded-runtime.js';
import { holdYoungGeneration } from './young-generation.js';
import { holdCompilerTiers } from './compiler-tiers.js';
import { importHttpWithoutUndici } from './http-namespace.js';
import { withDeferredDateFormats } from './date-formats.js';

// The coordinator is built and tested on Node.js 22 and later (its dependencies need it); on an older
// line it would fail somewhere deep and late, so it says so before doing anything.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(`coordinator: needs Node.js 22.12 or later; this is ${process.version} (${process.execPath})\n`);
  process.exit(1);
}
startEmbeddedRuntime();
holdYoungGeneration();
holdCompilerTiers();
// Before the framework imports node:http: its ES namespace, built here, does not load undici (http-namespace.ts).
await importHttpWithoutUndici();
// Nest's logger modules build date formats for its console logger, which never prints here (date-formats.ts).
await withDeferredDateFormats(() => import('@nestjs/common'));
await import('./cli.js');
