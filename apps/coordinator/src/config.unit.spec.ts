import { ENV_VARIABLES, loadConfig } from './config.js';
import { cleartextListenRefusal } from './tls/index.js';

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
    const config = loadConfig({
      PORT: '9000',
      DATABASE_URL: 'postgres://db.example/florete',
      FLORETE_MIRROR_PUSH_URL: 'https://git.example/audit.git',
      FLORETE_MIRROR_PUSH_USERNAME: '',
    });
    expect(config).toEqual(expect.objectContaining({ port: 9000, databaseUrl: 'postgres://db.example/florete' }));
    expect(config.mirror.push).toEqual({ url: 'https://git.example/audit.git', username: undefined, password: undefined });
  });

  it('still refuses a value that is set and wrong, naming the variable', () => {
    expect(() => loadConfig({ DATABASE_URL: 'not a url' })).toThrow(/^invalid environment: DATABASE_URL: /);
    expect(() => loadConfig({ PORT: '99999' })).toThrow(/^invalid environment: PORT: /);
    expect(() => loadConfig({ FLORETE_MIRROR: 'maybe' })).toThrow(/^invalid environment: FLORETE_MIRROR: /);
  });

  it('reads FLORETE_API_TOKEN_TTL: 90 days unless set, a duration from 1m to 366d, or none', () => {
    expect(loadConfig({}).apiTokenTtlSeconds).toBe(90 * 86400);
    expect(loadConfig({ FLORETE_API_TOKEN_TTL: '30d' }).apiTokenTtlSeconds).toBe(30 * 86400);
    expect(loadConfig({ FLORETE_API_TOKEN_TTL: '12h30m' }).apiTokenTtlSeconds).toBe(12.5 * 3600);
    expect(loadConfig({ FLORETE_API_TOKEN_TTL: 'none' }).apiTokenTtlSeconds).toBeNull();
    expect(() => loadConfig({ FLORETE_API_TOKEN_TTL: '3600' })).toThrow(
      'invalid environment: FLORETE_API_TOKEN_TTL: 3600 has no unit: write 3600s, or a duration such as 90d',
    );
    expect(() => loadConfig({ FLORETE_API_TOKEN_TTL: '30s' })).toThrow(/^invalid environment: FLORETE_API_TOKEN_TTL: 30s is outside 1m to 366d/);
    expect(() => loadConfig({ FLORETE_API_TOKEN_TTL: '400d' })).toThrow(/^invalid environment: FLORETE_API_TOKEN_TTL: 400d is outside 1m to 366d/);
    expect(() => loadConfig({ FLORETE_API_TOKEN_TTL: 'forever' })).toThrow(/^invalid environment: FLORETE_API_TOKEN_TTL: "forever" is not a duration/);
  });

  it('reads the TLS variables: a certificate pair, or a proxy and the addresses it comes from', () => {
    expect(loadConfig({}).tls).toEqual({ proxy: false, trustedProxies: [] });
    expect(loadConfig({ FLORETE_TLS_CERT: '/etc/t/cert.pem', FLORETE_TLS_KEY: '/etc/t/key.pem' }).tls).toEqual({
      certFile: '/etc/t/cert.pem',
      keyFile: '/etc/t/key.pem',
      proxy: false,
      trustedProxies: [],
    });
    expect(loadConfig({ FLORETE_TLS: 'proxy' }).tls).toEqual({ proxy: true, trustedProxies: ['127.0.0.1/8', '::1/128'] });
    expect(loadConfig({ FLORETE_TLS: 'proxy', FLORETE_TRUSTED_PROXIES: '10.0.0.2, 10.1.0.0/16,fd00::/64' }).tls.trustedProxies).toEqual([
      '10.0.0.2',
      '10.1.0.0/16',
      'fd00::/64',
    ]);
  });

  it('refuses half a pair, a proxy list without a proxy, and a proxy list that is not addresses', () => {
    expect(() => loadConfig({ FLORETE_TLS_KEY: '/k.pem' })).toThrow(
      'invalid environment: FLORETE_TLS_KEY is set without FLORETE_TLS_CERT: give both the certificate and its key (PEM files)',
    );
    expect(() => loadConfig({ FLORETE_TRUSTED_PROXIES: '10.0.0.2' })).toThrow(/^invalid environment: FLORETE_TRUSTED_PROXIES is set without FLORETE_TLS=proxy/);
    expect(() => loadConfig({ FLORETE_TLS: 'on' })).toThrow(/^invalid environment: FLORETE_TLS: /);
    for (const bad of ['proxy.example', '10.0.0.0/33', '10.0.0.0/8/1', 'fd00::/129', ' , ']) {
      expect(() => loadConfig({ FLORETE_TLS: 'proxy', FLORETE_TRUSTED_PROXIES: bad })).toThrow(/^invalid environment: FLORETE_TRUSTED_PROXIES: /);
    }
  });

  it('lets plain HTTP listen on loopback only, unless a certificate or a proxy is configured', () => {
    const refused = (env: Record<string, string>) => cleartextListenRefusal(loadConfig(env)) !== undefined;
    expect(refused({})).toBe(false);
    expect(refused({ HOST: '::1' })).toBe(false);
    expect(refused({ HOST: 'localhost' })).toBe(false);
    expect(refused({ HOST: '0.0.0.0' })).toBe(true);
    expect(refused({ HOST: '::' })).toBe(true);
    expect(refused({ HOST: '10.0.0.5' })).toBe(true);
    expect(refused({ HOST: '0.0.0.0', FLORETE_TLS: 'proxy' })).toBe(false);
    expect(refused({ HOST: '0.0.0.0', FLORETE_TLS_CERT: '/c.pem', FLORETE_TLS_KEY: '/k.pem' })).toBe(false);
  });
});
