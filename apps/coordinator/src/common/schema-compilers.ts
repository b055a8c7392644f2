import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type BuildValidator = NonNullable<CompilersFactory['buildValidator']>;
type BuildSerializer = NonNullable<CompilersFactory['buildSerializer']>;

/** Fastify's own compilers, required from where Fastify itself finds them. */
const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
let validator: BuildValidator | undefined;
let serializer: BuildSerializer | undefined;

/**
 * Fastify builds its JSON Schema validator (ajv, ajv-formats, fast-uri) and its response serializer
 * (fast-json-stringify) for every instance as it starts. No coordinator route declares a JSON schema
 * (each parses its input with the zod contracts), so both were loaded for nothing, and an idle
 * coordinator held them (bench:rss, bench/README.md). With these factories Fastify's same compilers
 * are loaded when a route first declares a schema. Fastify then counts the validator as the
 * operator's own: it compiles a headers schema as written, without lower-casing its property names
 * first.
 */
export const schemaCompilersOnFirstUse: CompilersFactory = {
  buildValidator: (externalSchemas, options) => {
    validator ??= (fromFastify('@fastify/ajv-compiler') as () => BuildValidator)();
    return validator(externalSchemas, options);
  },
  buildSerializer: (externalSchemas, options) => {
    serializer ??= (fromFastify('@fastify/fast-json-stringify-compiler') as () => BuildSerializer)();
    return serializer(externalSchemas, options);
  },
};
