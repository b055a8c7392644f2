#!/usr/bin/env node
// `npm run package:coordinator`: the coordinator as an installed service, built from this tree.
//
//   node scripts/package-coordinator.mjs [--version 0.1.1] [--out dist/package]
//
// Writes florete-coordinator_<version>_all.deb into the out folder:
//   /usr/lib/florete-coordinator     the built coordinator (dist/apps/coordinator, libs, migrations,
//                                    the web console) and its production node_modules (npm ci
//                                    --omit=dev against package-lock.json)
//   /usr/bin/florete-coordinator     runs it with the node on PATH; never rebuilds
//   florete-coordinator.service      deploy/systemd's unit: its own system user, a sandbox
//   /etc/florete/coordinator.env     the unit's environment (a conffile)
// It compiles into a folder of its own, never the tree's dist/, which running processes may use.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { filesUnder, packageOptions, ROOT, run, runMain, write } from './package-common.mjs';
import {
  controlFile,
  defaultEnvironment,
  ENV_FILE,
  launcherScript,
  LIB_DIR,
  maintainerScripts,
  nodeDependency,
  PACKAGE,
  systemdUnit,
} from './package-coordinator/tree.mjs';

const USAGE = 'usage: node scripts/package-coordinator.mjs [--version V] [--out DIR]';

/** The coordinator compiled into `build` (TypeScript and the console), as `npm run build` does into dist/. */
function compile(build) {
  const bin = (name) => join(ROOT, 'node_modules/.bin', name);
  run(bin('tsc'), ['-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(build, 'dist'), '--sourceMap', 'false'], { cwd: ROOT });
  run(bin('vite'), ['build', '-c', join(ROOT, 'apps/console/vite.config.mjs'), '--outDir', join(build, 'dist/console'), '--emptyOutDir'], { cwd: ROOT });
}

/**
 * package.json as the installed program needs it: its name and version, ES modules, the `#…`
 * imports (their built files only) and the runtime dependencies; nothing of the developer's.
 */
function runtimeManifest(pkg, version) {
  const imports = Object.fromEntries(Object.entries(pkg.imports ?? {}).map(([k, v]) => [k, v.default]));
  return {
    name: 'florete-coordinator',
    version,
    private: true,
    type: 'module',
    license: pkg.license,
    engines: pkg.engines,
    imports,
    dependencies: pkg.dependencies,
    overrides: pkg.overrides,
  };
}

/**
 * npm keeps a package that the development tools need and a production package names only as an
 * optional peer (typescript, for @nestjs/swagger): the lock marks it devOptional, and --omit=dev
 * installs it. The coordinator never loads it, so it goes, unless a production package needs it.
 */
function dropDevOptional(lib) {
  const packages = JSON.parse(readFileSync(join(lib, 'package-lock.json'), 'utf8')).packages ?? {};
  const needed = new Set();
  for (const [path, entry] of Object.entries(packages)) {
    if (path === '' || entry.dev || entry.devOptional) continue;
    for (const name of Object.keys(entry.dependencies ?? {})) needed.add(name);
  }
  for (const [path, entry] of Object.entries(packages)) {
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    if (entry.devOptional && !needed.has(name)) rmSync(join(lib, path), { recursive: true, force: true });
  }
  // Their commands in node_modules/.bin now point nowhere.
  const bin = join(lib, 'node_modules/.bin');
  for (const link of existsSync(bin) ? readdirSync(bin) : []) {
    if (!existsSync(join(bin, link))) rmSync(join(bin, link));
  }
}

/** The installed tree under `root`: the program, its production dependencies, the launcher, the unit and the environment file. */
function stageTree(root, work, version) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const build = join(work, 'build');
  compile(build);
  const lib = join(root, LIB_DIR);
  for (const part of ['apps/coordinator', 'libs', 'migrations', 'console']) {
    cpSync(join(build, 'dist', part), join(lib, 'dist', part), { recursive: true, filter: (src) => !/\.(spec|test)\.js$/.test(src) });
  }
  // The production dependencies exactly as the lock file pins them, installed without running any
  // package's scripts; the full package.json is the one the lock file was made from.
  writeFileSync(join(lib, 'package.json'), JSON.stringify(pkg, null, 2));
  cpSync(join(ROOT, 'package-lock.json'), join(lib, 'package-lock.json'));
  run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: lib,
    env: { ...process.env, NODE_ENV: 'production' },
  });
  dropDevOptional(lib);
  rmSync(join(lib, 'package-lock.json'));
  writeFileSync(join(lib, 'package.json'), `${JSON.stringify(runtimeManifest(pkg, version), null, 2)}\n`);

  write(join(root, 'usr/bin/florete-coordinator'), launcherScript(), 0o755);
  write(
    join(root, 'usr/lib/systemd/system/florete-coordinator.service'),
    systemdUnit(readFileSync(join(ROOT, 'deploy/systemd/florete-coordinator.service'), 'utf8')),
    0o644,
  );
  write(join(root, ENV_FILE.slice(1)), defaultEnvironment(), 0o640);
  write(join(root, 'usr/share/doc/florete-coordinator/README.md'), readFileSync(join(ROOT, 'README.md')), 0o644);
  write(join(root, 'usr/share/doc/florete-coordinator/operator-guide.md'), readFileSync(join(ROOT, 'docs/operator-guide.md')), 0o644);
  return nodeDependency(pkg.engines?.node);
}

/** DEBIAN/: control, conffiles, md5sums and the maintainer scripts, next to the staged tree. */
function debianControl(root, version, node) {
  const files = filesUnder(root).map((p) => relative(root, p));
  const conffiles = [ENV_FILE.slice(1)];
  const installedKiB = files.reduce((sum, f) => sum + Math.ceil(statSync(join(root, f)).size / 1024), 0);
  write(join(root, 'DEBIAN/control'), controlFile({ version, installedKiB, node }), 0o644);
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

async function main() {
  const { version, out } = packageOptions({ usage: USAGE });
  if (!existsSync(join(ROOT, 'node_modules/.bin/tsc'))) throw new Error('node_modules has no TypeScript: run npm ci first');
  mkdirSync(out, { recursive: true });
  const work = mkdtempSync(join(out, '.work-'));
  try {
    const tree = join(work, 'tree');
    const node = stageTree(tree, work, version);
    // Everything world-readable (the program runs as its own user), the environment file aside.
    run('chmod', ['-R', 'u+rwX,go+rX,go-w', join(tree, 'usr')]);
    debianControl(tree, version, node);
    const deb = join(out, `${PACKAGE}_${version}_all.deb`);
    run('dpkg-deb', ['--root-owner-group', '-Zxz', '--build', tree, deb]);
    const mib = (n) => `${(n / 1024 / 1024).toFixed(2)} MiB`;
    process.stdout.write(`${relative(process.cwd(), deb) || deb}  ${mib(statSync(deb).size)}  (Depends: ${node})\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  runMain('package:coordinator', main);
}
