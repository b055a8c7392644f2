/**
 * The layering the build holds (npm run lint:layers, run by npm test): the coordinator's folders
 * point down only and are entered through their face, and the agent, the CLI and the libs never
 * reach into the coordinator. docs/architecture.md describes the floors.
 *
 * Tests (*.spec.ts) inside a folder may wire what they test from other folders' insides; they are
 * held only by the rules on apps and libs.
 */
const SRC = '^apps/coordinator/src/';

/**
 * The coordinator's folders from the ground floor up. A folder imports only folders of lower floors;
 * folders on one floor import none of each other. A strict order has no circle, so this also holds
 * that no two folders import each other, however far round. Above the top floor stand the files of
 * src/ itself (app.module.ts, server.ts, cli.ts, main.ts), which may import any face; config.ts
 * stands below every folder.
 */
const FLOORS = [
  ['common'],
  ['db', 'core', 'tls'],
  ['ledger'],
  ['trust'],
  ['identity'],
  ['fleet'],
  ['bundles'],
  ['packages', 'mirror', 'projections', 'rollouts', 'console'],
  ['health'],
];

const ROOT_FILES_BUT_CONFIG = `${SRC}(?!config\\.ts$)[^/]+\\.ts$`;

const downOnly = FLOORS.flatMap((floor, level) =>
  floor.map((folder) => {
    const higher = FLOORS.slice(level)
      .flat()
      .filter((f) => f !== folder);
    return {
      name: `coordinator-${folder}-points-down`,
      comment: `${folder}/ stands on floor ${level + 1}: it may import only folders below it (${FLOORS.slice(0, level).flat().join(', ') || 'none'}) and config.ts. What it needs from a folder above it, it declares as a port that folder provides.`,
      severity: 'error',
      from: { path: `${SRC}${folder}/`, pathNot: '\\.spec\\.ts$' },
      to: { path: [`${SRC}(${higher.join('|')})/`, ROOT_FILES_BUT_CONFIG] },
    };
  }),
);

module.exports = {
  forbidden: [
    ...downOnly,
    {
      name: 'coordinator-folders-have-one-face',
      comment: "Another folder's files are reached through its index.ts only: what is not exported there is that folder's own.",
      severity: 'error',
      from: { path: `${SRC}([^/]+)/`, pathNot: '\\.spec\\.ts$' },
      to: { path: `${SRC}[^/]+/.`, pathNot: [`${SRC}$1/`, `${SRC}[^/]+/index\\.ts$`] },
    },
    {
      name: 'coordinator-root-uses-faces',
      comment: 'app.module.ts, server.ts and cli.ts wire the folders through their faces too.',
      severity: 'error',
      from: { path: `${SRC}[^/]+\\.ts$`, pathNot: '\\.spec\\.ts$' },
      to: { path: `${SRC}[^/]+/.`, pathNot: `${SRC}[^/]+/index\\.ts$` },
    },
    {
      name: 'coordinator-no-circular',
      comment: 'No file of the coordinator reaches itself through its imports.',
      severity: 'error',
      from: { path: SRC, pathNot: '\\.spec\\.ts$' },
      to: { circular: true, pathNot: '\\.spec\\.ts$' },
    },
    {
      name: 'agent-and-cli-stay-out-of-the-coordinator',
      comment: 'flor and retectl ship without the coordinator: what they share with it lives in libs/.',
      severity: 'error',
      from: { path: '^apps/(flor|retectl)/' },
      to: { path: '^apps/coordinator/' },
    },
    {
      name: 'libs-never-import-apps',
      comment: 'libs/ are the shared ground of every app: an app depends on them, never the other way.',
      severity: 'error',
      from: { path: '^libs/' },
      to: { path: '^apps/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['(^|/)dist/', 'node_modules'] },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'],
      conditionNames: ['types', 'import', 'default'],
    },
  },
};
