// Source rewrites, in the agent's bundle only, that let the bundler leave out the code the agent
// never runs. What a process has parsed and built stays in its memory, so the bundle's size is most
// of the packaged agent's idle RSS above the runtime's own (see bench:agent).
import { readFileSync } from 'node:fs';
import ts from 'typescript';

/**
 * `import { z } from 'zod'` binds the whole zod namespace as one object, which the bundler must keep
 * with everything in it (every locale, JSON Schema conversion, …). `import * as z from 'zod'` names
 * the same functions (zod's entry re-exports them), but as a namespace import used only as `z.x`,
 * which the bundler resolves export by export: only the parts the agent calls remain.
 */
export function zodNamespaceImport(source) {
  return source.replace(/^import \{ z \} from 'zod';$/gm, "import * as z from 'zod';");
}

/**
 * A top-level `export const X = z.object({…}).strict()` is a chain of calls, which a bundler must
 * keep in case it has side effects. The contracts' schema constants have none (they build zod
 * objects and register nothing), so each one is wrapped in an immediately called arrow marked pure,
 * `/* @__PURE__ *\/ (() => (z.object({…}).strict()))()`: the ones the agent uses behave exactly as
 * before, the others (the coordinator's API, the rete) are never built.
 */
export function wrapTopLevelCalls(source, fileName = 'x.ts') {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const edits = [];
  for (const statement of file.statements) {
    if (!ts.isVariableStatement(statement) || !(statement.declarationList.flags & ts.NodeFlags.Const)) continue;
    for (const decl of statement.declarationList.declarations) {
      const init = decl.initializer;
      if (!init || !ts.isCallExpression(init)) continue;
      edits.push({ at: init.getStart(file), text: '/* @__PURE__ */ (() => (' }, { at: init.getEnd(), text: '))()' });
    }
  }
  let out = source;
  for (const { at, text } of edits.sort((a, b) => b.at - a.at)) out = out.slice(0, at) + text + out.slice(at);
  return out;
}

/** esbuild plugin: the rewrites above on this repository's TypeScript (the schema wrap on libs/contracts only). */
export function treeShaking(root) {
  const escaped = root.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return {
    name: 'florete-tree-shaking',
    setup(b) {
      b.onLoad({ filter: new RegExp(`^${escaped}/(apps|libs)/.*\\.ts$`) }, (args) => {
        let source = zodNamespaceImport(readFileSync(args.path, 'utf8'));
        if (/\/libs\/contracts\/src\/[^/]+\.schema\.ts$/.test(args.path)) source = wrapTopLevelCalls(source, args.path);
        return { contents: source, loader: 'ts' };
      });
    },
  };
}
