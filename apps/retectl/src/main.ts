#!/usr/bin/env node
// retectl, the operator's CLI: its commands arrive with their own issue.
process.stderr.write('retectl: not implemented yet\n');
process.exit(1);
