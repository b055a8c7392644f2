import Fastify from 'fastify';
import { schemaCompilersOnFirstUse } from './schema-compilers.js';

describe('schemaCompilersOnFirstUse', () => {
  it("validates and serializes with Fastify's own compilers once a route declares a schema", async () => {
    const app = Fastify({ schemaController: { compilersFactory: schemaCompilersOnFirstUse } });
    app.post(
      '/echo',
      {
        schema: {
          body: { type: 'object', required: ['n'], properties: { n: { type: 'integer', minimum: 1 } } },
          response: { 200: { type: 'object', properties: { n: { type: 'integer' } } } },
        },
      },
      (req) => ({ n: (req.body as { n: number }).n, dropped: 'not in the response schema' }),
    );
    try {
      const ok = await app.inject({ method: 'POST', url: '/echo', payload: { n: 2 } });
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toEqual({ n: 2 });
      const bad = await app.inject({ method: 'POST', url: '/echo', payload: { n: 0 } });
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toEqual(expect.objectContaining({ code: 'FST_ERR_VALIDATION' }));
    } finally {
      await app.close();
    }
  });
});
