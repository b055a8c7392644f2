import { ENV_VARIABLES, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('takes an empty DATABASE_URL as unset (PGlite), not as an invalid URL', () => {
    expect(loadConfig({ DATABASE_URL: '' }).databaseUrl).toBeUndefined();
  });

  it('takes every variable set to the empty string as unset: the defaults apply', () => {
    expect(ENV_VARIABLES).toContain('FLORETE_MIRROR_PUSH_URL');
    const empty = Object.fromEntries(ENV_VARIABLES.map((name) => [name, '']));
    expect(loadConfig(empty)).toEqual(loadConfig({}));
    // Not port 0, which would listen on a random port.
    expect(loadConfig({ PORT: '' }).port).toBe(8080);
  });

  it('reads the variables that are set', () => {
    const config = loadConfig({ PORT: '9000', DATABASE_URL: 'postgres://db.example/florete', FLORETE_MIRROR_PUSH_URL: 'https://git.example/audit.git', FLORETE_MIRROR_PUSH_USERNAME: '' });
    expect(config).toEqual(expect.objectContaining({ port: 9000, databaseUrl: 'postgres://db.example/florete' }));
    expect(config.mirror.push).toEqual({ url: 'https://git.example/audit.git', username: undefined, password: undefined });
  });

  it('still refuses a value that is set and wrong, naming the variable', () => {
    expect(() => loadConfig({ DATABASE_URL: 'not a url' })).toThrow(/^invalid environment: DATABASE_URL: /);
    expect(() => loadConfig({ PORT: '99999' })).toThrow(/^invalid environment: PORT: /);
    expect(() => loadConfig({ FLORETE_MIRROR: 'maybe' })).toThrow(/^invalid environment: FLORETE_MIRROR: /);
  });
});
