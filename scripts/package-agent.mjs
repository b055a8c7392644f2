#!/usr/bin/env node
// `npm run package:agent`: the node agent as a lightweight package, built from this tree.
//
//   node scripts/package-agent.mjs [--version 0.1.1] [--out dist/package] [--no-sea]
//
// Writes into the out folder:
//   florete-agent_<version>_all.deb   the agent bundled into one ESM file, /usr/bin/flor, the systemd
//                                     unit and the default config; depends on nodejs (>= 20)
//   florete-agent_<version>.tar.gz    the same tree, for hosts without dpkg (it runs from any folder)
//   flor-<version>-linux-<arch>       one self-contained executable (Node's single executable
//                                     application) for hosts without Node; skipped with --no-sea
// The version is package.json's unless --version or $FLORETE_AGENT_VERSION says otherwise, so a
// test can build "the next version" of the same tree; the bundled agent reports that version.
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { filesUnder, packageOptions, ROOT, run, runMain, write } from './package-common.mjs';
import { treeShaking } from './package-agent/tree-shaking.mjs';
import { systemdUnit, wrapperScript, defaultConfig, controlFile, maintainerScripts, NODE_FLAGS, seaFlags } from './package-agent/tree.mjs';

const USAGE = 'usage: node scripts/package-agent.mjs [--version V] [--out DIR] [--no-sea]';
const PACKAGE = 'florete-agent';
const ENTRY = join(ROOT, 'apps/flor/src/main.ts');
/** Where the package puts the bundled program; /usr/bin/flor runs it. */
export const LIB_DIR = 'usr/lib/florete-agent';

/** `#contracts` and the other package imports, resolved to their TypeScript sources (the bundle never needs dist/). */
export function packageImports() {
  const imports = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).imports ?? {};
  return {
    name: 'florete-package-imports',
    setup(b) {
      b.onResolve({ filter: /^#/ }, (args) => {
        const entry = imports[args.path];
        if (!entry?.types) return { errors: [{ text: `${args.path} is not in package.json "imports" with a "types" source` }] };
        return { path: join(ROOT, entry.types) };
      });
    },
  };
}

/** The agent as one file: `esm` for the package (run by the host's node), `cjs` for the single executable. */
export async function bundleAgent({ format, version, outfile }) {
  const result = await build({
    entryPoints: [ENTRY],
    // Paths in the metafile are relative to this, whatever folder the command runs from.
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    format,
    target: 'node20',
    minify: true,
    outfile,
    metafile: true,
    logLevel: 'warning',
    // The CommonJS build (the single executable) has no import.meta: the only use is the version's
    // fallback to package.json, which the defined version below makes dead code.
    logOverride: format === 'cjs' ? { 'empty-import-meta': 'silent' } : undefined,
    legalComments: 'none',
    define: { __FLORETE_AGENT_VERSION__: JSON.stringify(version) },
    // commander is CommonJS and requires node: built-ins, which an ES module bundle can only do through createRequire.
    banner:
      format === 'esm'
        ? { js: "import { createRequire as __floreteRequire } from 'node:module'; const require = __floreteRequire(import.meta.url);" }
        : undefined,
    plugins: [packageImports(), treeShaking(ROOT)],
  });
  return result.metafile;
}

/** The npm packages a bundle holds, from esbuild's metafile: for the size report and the licence notices. */
export function bundledPackages(metafile) {
  const sizes = new Map();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const parts = input.split('/');
      const at = parts.lastIndexOf('node_modules');
      const name = at < 0 ? '(florete)' : parts.slice(at + 1, at + (parts[at + 1].startsWith('@') ? 3 : 2)).join('/');
      const dir = at < 0 ? null : resolve(ROOT, parts.slice(0, at + (parts[at + 1].startsWith('@') ? 3 : 2)).join('/'));
      const seen = sizes.get(name) ?? { bytes: 0, dir };
      seen.bytes += bytesInOutput;
      sizes.set(name, seen);
    }
  }
  return [...sizes.entries()].map(([name, v]) => ({ name, bytes: v.bytes, dir: v.dir })).sort((a, b) => b.bytes - a.bytes);
}

/** The licence texts of the bundled npm packages: their MIT/ISC terms ask that the notice travel with the code. */
export function thirdPartyNotices(packages, bundle = `/${LIB_DIR}/flor.mjs`) {
  const parts = [];
  for (const { name, dir } of packages) {
    if (!dir) continue;
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    const text = file ? readFileSync(join(dir, file), 'utf8').trim() : `(no licence file in the npm package; package.json says: ${pkg.license ?? 'nothing'})`;
    parts.push(`${name} ${pkg.version} (${pkg.license ?? 'unknown licence'})\n\n${text}\n`);
  }
  return `Third-party code bundled into ${bundle}\n\n${parts.join(`\n${'-'.repeat(72)}\n\n`)}`;
}

/** The installed tree (what the .deb and the .tar.gz hold), under `root`. */
async function stageTree(root, version) {
  const metafile = await bundleAgent({ format: 'esm', version, outfile: join(root, LIB_DIR, 'flor.mjs') });
  chmodSync(join(root, LIB_DIR, 'flor.mjs'), 0o644);
  const packages = bundledPackages(metafile);
  write(join(root, 'usr/bin/flor'), wrapperScript(), 0o755);
  write(
    join(root, 'usr/lib/systemd/system/florete-agent.service'),
    systemdUnit(readFileSync(join(ROOT, 'deploy/systemd/florete-agent.service'), 'utf8')),
    0o644,
  );
  write(join(root, 'etc/florete/agent.yaml'), defaultConfig(), 0o644);
  write(join(root, 'usr/share/doc/florete-agent/README.md'), readFileSync(join(ROOT, 'apps/flor/README.md')), 0o644);
  write(join(root, 'usr/share/doc/florete-agent/THIRD-PARTY-NOTICES'), thirdPartyNotices(packages), 0o644);
  return packages;
}

/** DEBIAN/: control, conffiles, md5sums and the maintainer scripts, next to the staged tree. */
function debianControl(root, version) {
  const files = filesUnder(root).map((p) => relative(root, p));
  const conffiles = ['etc/florete/agent.yaml'];
  const installedKiB = files.reduce((sum, f) => sum + Math.ceil(statSync(join(root, f)).size / 1024), 0);
  write(join(root, 'DEBIAN/control'), controlFile({ version, installedKiB }), 0o644);
  write(join(root, 'DEBIAN/conffiles'), conffiles.map((f) => `/${f}\n`).join(''), 0o644);
  const md5 = files
    .filter((f) => !conffiles.includes(f))
    .map(
      (f) =>
        `${createHash('md5')
          .update(readFileSync(join(root, f)))
          .digest('hex')}  ${f}\n`,
    );
  write(join(root, 'DEBIAN/md5sums'), md5.join(''), 0o644);
  for (const [name, body] of Object.entries(maintainerScripts())) write(join(root, 'DEBIAN', name), body, 0o755);
}

/**
 * One self-contained executable: a CommonJS bundle injected into a copy of this node binary, with the
 * launcher's V8 flags that this node accepts in its blob (`execArgv`, read from Node 22 on; older
 * lines ignore the key and run without them).
 */
async function buildSea(work, version, outfile) {
  const main = join(work, 'flor.cjs');
  await bundleAgent({ format: 'cjs', version, outfile: main });
  const blob = join(work, 'sea-prep.blob');
  const config = join(work, 'sea-config.json');
  writeFileSync(config, JSON.stringify({ main, output: blob, disableExperimentalSEAWarning: true, execArgv: seaFlags(process.execPath) }));
  run(process.execPath, ['--experimental-sea-config', config]);
  copyFileSync(process.execPath, outfile);
  chmodSync(outfile, 0o755);
  const postject = join(ROOT, 'node_modules/postject/dist/cli.js');
  run(process.execPath, [postject, outfile, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2']);
}

async function main() {
  const {
    version,
    out,
    'no-sea': noSea,
  } = packageOptions({ usage: USAGE, flags: ['no-sea'], fallbackVersion: process.env.FLORETE_AGENT_VERSION || undefined });
  const sea = !noSea;
  mkdirSync(out, { recursive: true });
  const work = mkdtempSync(join(out, '.work-'));
  try {
    const tree = join(work, 'tree');
    const packages = await stageTree(tree, version);

    // The tarball first: the same tree without DEBIAN/.
    const tarball = join(out, `${PACKAGE}_${version}.tar.gz`);
    run('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '-czf', tarball, '-C', tree, 'etc', 'usr']);

    debianControl(tree, version);
    const deb = join(out, `${PACKAGE}_${version}_all.deb`);
    run('dpkg-deb', ['--root-owner-group', '--build', tree, deb]);

    const built = [deb, tarball];
    if (sea) {
      const exe = join(out, `flor-${version}-linux-${arch()}`);
      await buildSea(work, version, exe);
      built.push(exe);
    }
    const mib = (n) => `${(n / 1024 / 1024).toFixed(2)} MiB`;
    for (const f of built) process.stdout.write(`${relative(process.cwd(), f) || f}  ${mib(statSync(f).size)}\n`);
    process.stdout.write(
      `bundle ${mib(statSync(join(tree, LIB_DIR, 'flor.mjs')).size)}: ${packages.map((p) => `${p.name} ${(p.bytes / 1024).toFixed(0)} KiB`).join(', ')}\n`,
    );
    process.stdout.write(`node flags in /usr/bin/flor, each where the node accepts it: ${NODE_FLAGS.join(' ')}\n`);
    if (sea) process.stdout.write(`node flags in the single executable (node ${process.versions.node}): ${seaFlags(process.execPath).join(' ') || '(none)'}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runMain('package:agent', main);
}
