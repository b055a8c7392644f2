#!/usr/bin/env node
// The young generation is held small before anything else is loaded, compiling the modules included;
// the commands come after, by a dynamic import (see young-generation.ts).
import { holdYoungGeneration } from './young-generation.js';

holdYoungGeneration();
await import('./cli.js');
