#!/usr/bin/env node
// flor, the node agent: its commands arrive with their own issue.
process.stderr.write('flor: not implemented yet\n');
process.exit(1);
