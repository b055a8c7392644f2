import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { AgentConfig } from '#contracts';
import { loadConfig } from '../../apps/flor/src/agent/config.js';

/**
 * The /etc/florete/agent.yaml the package ships promises every key with its default. These checks
 * derive the keys from the agent's own schema, so a key added to the schema and not to the shipped
 * file fails here instead of going unmentioned.
 */

type TreeModule = { defaultConfig: () => string };
const tree = (await import(pathToFileURL(resolve('scripts/package-agent/tree.mjs')).href)) as TreeModule;
const shipped = tree.defaultConfig();

/** Key paths of an object schema, into nested objects through optional/default/prefault; a union or record is a leaf. */
function schemaKeys(schema: z.ZodType, prefix = ''): string[] {
  let s = schema as unknown as { _zod: { def: { type: string; innerType?: unknown; shape?: Record<string, z.ZodType> } } };
  while (s._zod.def.innerType) s = s._zod.def.innerType as typeof s;
  if (s._zod.def.type !== 'object' || !s._zod.def.shape) return [];
  return Object.entries(s._zod.def.shape).flatMap(([key, inner]) => [prefix + key, ...schemaKeys(inner, `${prefix}${key}.`)]);
}

/** Key paths present in a parsed YAML mapping. */
function documentKeys(value: unknown, prefix = ''): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value).flatMap(([key, inner]) => [prefix + key, ...documentKeys(inner, `${prefix}${key}.`)]);
}

/** The shipped text with its commented-out keys set: `# key: …` and `#   key: …` lose their `# `. */
const uncommented = shipped.replace(/^# (\s*[a-z_]+:)/gm, '$1');

function load(text: string): AgentConfig {
  const dir = mkdtempSync(join(tmpdir(), 'florete-default-config-'));
  try {
    writeFileSync(join(dir, 'agent.yaml'), text);
    return loadConfig({ config: join(dir, 'agent.yaml') });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the shipped /etc/florete/agent.yaml', () => {
  it('names every key of the local config schema, set or commented out', () => {
    const keys = schemaKeys(AgentConfig);
    // The schema walk itself must see the nested keys, or this test would check nothing below the top.
    expect(keys).toEqual(expect.arrayContaining(['packages.apt.sources_dir', 'self_upgrade.binary', 'vertex_control.socket', 'tls.ca_file']));
    const mentioned = new Set(documentKeys(parseYaml(uncommented)));
    expect(keys.filter((k) => !mentioned.has(k))).toEqual([]);
  });

  it('is read by the agent as its defaults, with the state dir and install dir it names', () => {
    expect(load(shipped)).toEqual(AgentConfig.parse({ state_dir: '/var/lib/florete/agent', install: { dir: '/etc/florete' } }));
  });

  it('comments out exactly the keys whose default is absent, and each one is valid once set', () => {
    const set = load(uncommented);
    const commented = documentKeys(parseYaml(uncommented)).filter((k) => !documentKeys(parseYaml(shipped)).includes(k) && !k.includes('.'));
    expect(commented.sort()).toEqual(['insecure_http', 'tls', 'vertex_control']);
    const defaults = AgentConfig.parse({}) as Record<string, unknown>;
    for (const key of commented) {
      expect(defaults[key]).toBeUndefined();
      expect((set as Record<string, unknown>)[key]).toBeDefined();
    }
  });
});
