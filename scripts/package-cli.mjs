#!/usr/bin/env node
// `npm run package:cli`: retectl, the operator's CLI, as something an operator installs without this
// repository.
//
//   node scripts/package-cli.mjs [--out dist/cli]
//
// Writes into the out folder:
//   retectl.mjs                 the CLI bundled into one ESM file; runs with a stock Node.js 22.12+ from any
//                               folder (`node retectl.mjs …`, or make it executable: it has a #! line)
//   florete-retectl-<v>.tgz     an npm package of that file: `npm install -g florete-retectl-<v>.tgz`
//                               puts `retectl` on the PATH. It has no dependencies: nothing is fetched.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { bundledPackages, packageImports, thirdPartyNotices } from './package-agent.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRY = join(ROOT, 'apps/retectl/src/main.ts');
const NAME = 'florete-retectl';
const USAGE = 'usage: node scripts/package-cli.mjs [--out DIR]';

class UsageError extends Error {}

function options() {
  try {
    const { values } = parseArgs({
      options: { out: { type: 'string', default: join(ROOT, 'dist/cli') }, help: { type: 'boolean', default: false } },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    }
    return { out: resolve(values.out) };
  } catch (err) {
    throw new UsageError(`${err.message}; ${USAGE}`);
  }
}

/** The CLI as one ES module; the #! line of main.ts stays first, the banner follows it. */
async function bundleCli(outfile) {
  const result = await build({
    entryPoints: [ENTRY],
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    outfile,
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
    // CommonJS dependencies require node: built-ins, which an ES module bundle can only do through createRequire.
    banner: { js: "import { createRequire as __floreteRequire } from 'node:module'; const require = __floreteRequire(import.meta.url);" },
    plugins: [packageImports()],
  });
  chmodSync(outfile, 0o755);
  return bundledPackages(result.metafile);
}

/** The npm package: the bundle, its README and notices, and a package.json with no dependencies. */
function packFolder(stage, version, bundle, packages) {
  mkdirSync(stage, { recursive: true });
  copyFileSync(bundle, join(stage, 'retectl.mjs'));
  chmodSync(join(stage, 'retectl.mjs'), 0o755);
  copyFileSync(join(ROOT, 'apps/retectl/README.md'), join(stage, 'README.md'));
  writeFileSync(join(stage, 'THIRD-PARTY-NOTICES'), thirdPartyNotices(packages, 'retectl.mjs'));
  const manifest = {
    name: NAME,
    version,
    description: "retectl, the Florete operator's CLI: validate, compile, plan and publish a rete, then inspect and roll back",
    type: 'module',
    bin: { retectl: 'retectl.mjs' },
    files: ['retectl.mjs', 'README.md', 'THIRD-PARTY-NOTICES'],
    engines: { node: '>=22.12' },
    license: 'UNLICENSED',
  };
  writeFileSync(join(stage, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
}

function npmPack(stage, out) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['pack', '--json', '--pack-destination', out], { cwd: stage, encoding: 'utf8' });
  if (r.error) throw new Error(`npm pack: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`npm pack exited with ${r.status}: ${(r.stderr || r.stdout).trim()}`);
  return join(out, JSON.parse(r.stdout)[0].filename);
}

async function main() {
  const { out } = options();
  const version = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
  mkdirSync(out, { recursive: true });
  const bundle = join(out, 'retectl.mjs');
  const packages = await bundleCli(bundle);
  const work = mkdtempSync(join(out, '.work-'));
  try {
    const tarball = npmPack((packFolder(join(work, 'package'), version, bundle, packages), join(work, 'package')), out);
    const mib = (n) => `${(n / 1024 / 1024).toFixed(2)} MiB`;
    for (const f of [bundle, tarball]) process.stdout.write(`${relative(process.cwd(), f) || f}  ${mib(statSync(f).size)}\n`);
    process.stdout.write(`bundle: ${packages.map((p) => `${p.name} ${(p.bytes / 1024).toFixed(0)} KiB`).join(', ')}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`package:cli: ${err instanceof UsageError ? err.message : (err.stack ?? err.message)}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
