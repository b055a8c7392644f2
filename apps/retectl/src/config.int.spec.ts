import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RetectlError } from './errors.js';
import { configPath, resolveConnection, writeConfig } from './config.js';

describe('resolveConnection', () => {
  let home: string;
  const env = (vars: Record<string, string>) => ({ HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ...vars });
  const failure = (e: NodeJS.ProcessEnv): RetectlError => {
    try {
      resolveConnection({}, undefined, e);
    } catch (error) {
      if (error instanceof RetectlError) return error;
      throw error;
    }
    throw new Error('resolveConnection did not fail');
  };

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'retectl-config-'));
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('takes an empty FLORETE_COORDINATOR or FLORETE_TOKEN as unset: the config file applies', () => {
    writeConfig({ coordinator: 'https://from-file.example', token: 'flt.file' }, configPath(env({})));
    expect(resolveConnection({}, undefined, env({ FLORETE_COORDINATOR: '', FLORETE_TOKEN: '' }))).toEqual({
      url: 'https://from-file.example',
      token: 'flt.file',
    });
  });

  it('with nothing else set, an empty variable is a missing setting, not a bad URL', () => {
    const noUrl = failure(env({ FLORETE_COORDINATOR: '', FLORETE_TOKEN: 'flt.x' }));
    expect(noUrl.code).toBe('usage');
    expect(noUrl.message).toMatch(/^no coordinator URL/);
    const noToken = failure(env({ FLORETE_COORDINATOR: 'https://c.example', FLORETE_TOKEN: '' }));
    expect(noToken.code).toBe('usage');
    expect(noToken.message).toMatch(/^no API token/);
  });

  it('takes an empty XDG_CONFIG_HOME as unset: the file under HOME applies', () => {
    writeConfig({ coordinator: 'https://home.example', token: 'flt.home' }, join(home, '.config', 'florete', 'retectl.json'));
    expect(resolveConnection({}, undefined, { HOME: home, XDG_CONFIG_HOME: '' })).toEqual({ url: 'https://home.example', token: 'flt.home' });
  });
});
