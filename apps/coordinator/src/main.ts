#!/usr/bin/env node
// The young generation is held small and V8's compilers off before anything else is loaded,
// compiling the modules included; the commands come after, by a dynamic import (see
// young-generation.ts and compiler-tiers.ts).
import { holdYoungGeneration } from './young-generation.js';
import { holdCompilerTiers } from './compiler-tiers.js';
import { importHttpWithoutUndici } from './http-namespace.js';

// The coordinator is built and tested on Node.js 22 and later (its dependencies need it); on an older
// line it would fail somewhere deep and late, so it says so before doing anything.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(`coordinator: needs Node.js 22.12 or later; this is ${process.version} (${process.execPath})\n`);
  process.exit(1);
}
holdYoungGeneration();
holdCompilerTiers();
// Before the framework imports node:http: its ES namespace, built here, does not load undici (http-namespace.ts).
await importHttpWithoutUndici();
await import('./cli.js');
