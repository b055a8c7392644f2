import 'reflect-metadata';
import type { IncomingMessage } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { pino, type Logger } from 'pino';
import { AppModule } from './app.module.js';
import type { CoordinatorConfig } from './config.js';
import { migrateOpened, openDatabase, writeBackStartUp, type Db, openChangeFeed, type ChangeFeed, registerBackupRoute } from './db/index.js';
import { SigningKeyStore, Metrics, observeRequestLatency } from './core/index.js';
import { AptRepository, RepoKey, foldFlatDist } from './packages/index.js';
import {
  ProblemFilter,
  PinoNestLogger,
  clientErrorHandler,
  frameworkErrors,
  hardenHttp,
  SMALL_BODY_LIMIT,
  REQUEST_ID_HEADER,
  requestIdOf,
  schemaCompilersOnFirstUse,
} from './common/index.js';
import { countApiTokens, expiryOf, issueApiToken, firstAdminTokenLines, writeFirstAdminToken, type WrittenToken, AuthService } from './identity/index.js';
import { lockLedger, LedgerWriter } from './ledger/index.js';
import { signingTrust } from './trust/index.js';
import { registerDocsRoutes } from './docs-http.js';
import { PollRoute } from './bundles/index.js';
import { registerAuditRoutes } from './mirror/index.js';
import { registerConsoleRoutes } from './console/index.js';
import type { Server as HttpsServer } from 'node:https';
import { cleartextListenRefusal, ServedCertificate } from './tls/index.js';

export interface RunningCoordinator {
  readonly app: NestFastifyApplication;
  readonly url: string;
  readonly db: Db;
  /** The first admin token when this start created it; undefined on every later start. */
  readonly firstAdminToken?: string;
  /** The 0600 file in the data dir this start wrote the first admin token to. */
  readonly firstAdminTokenFile?: string;
  /** When the coordinator serves TLS itself. */
  readonly certificate?: ServedCertificate;
  close(): Promise<void>;
}

/**
 * The coordinator's log: JSON lines in the agent's shape (libs/runtime json-log), so one query reads
 * both: `time` an RFC 3339 string, `level` its name, `msg` the message.
 */
export function createLogger(config: CoordinatorConfig): Logger {
  return pino({
    level: config.logLevel,
    base: { service: 'coordinator' },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'msg',
    formatters: { level: (label) => ({ level: label }) },
  });
}

/** Opens storage, migrates, loads keys, and serves the API. */
export interface StartOptions {
  /** Receives the one-time lines an operator must see whatever the log level (where the first admin token is). */
  readonly announce?: (line: string) => void;
  /** announce reaches a terminal: the first admin token itself may be shown, not only its file. */
  readonly terminal?: boolean;
}

export async function startCoordinator(config: CoordinatorConfig, log: Logger = createLogger(config), options: StartOptions = {}): Promise<RunningCoordinator> {
  // Before anything is opened: a coordinator that may not listen as configured changes nothing.
  const refusal = cleartextListenRefusal(config);
  if (refusal) throw new Error(refusal);
  const certificate = config.tls.certFile !== undefined ? ServedCertificate.load(config.tls.certFile, config.tls.keyFile!, log) : undefined;
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: config.dbPoolSize, command: 'serve' });
  let feed: ChangeFeed | undefined;
  try {
    const applied = await migrateOpened(db);
    if (applied.length) log.info({ migrations: applied }, 'database migrated');
    feed = await openChangeFeed(db, log);
    const keys = await SigningKeyStore.open(config.signingKeysFile);
    const apt = new AptRepository(db.kysely, await RepoKey.open(config.repoKeyFile));
    const firstAdmin = await ensureFirstAdminToken(db, keys, config.dataDir, config.apiTokenTtlSeconds);
    await settleTrust(db, keys);
    if (firstAdmin) {
      if (firstAdmin.written.replaced) log.warn({ file: firstAdmin.written.path }, 'replaced a first admin token file whose token this database never had');
      for (const line of firstAdminTokenLines(firstAdmin.token, firstAdmin.written, options.terminal === true, firstAdmin.expiresAt)) options.announce?.(line);
    }

    const adapter = new FastifyAdapter({
      bodyLimit: SMALL_BODY_LIMIT,
      logger: false,
      return503OnClosing: true,
      frameworkErrors: frameworkErrors(log),
      clientErrorHandler: clientErrorHandler(log),
      ...(certificate ? { https: { cert: certificate.current.cert, key: certificate.current.key } } : {}),
      // The client address (rate limits, logs) comes from X-Forwarded-For only when the proxy sent it.
      trustProxy: config.tls.proxy ? [...config.tls.trustedProxies] : false,
      rewriteUrl: (req: IncomingMessage) => foldFlatDist(req.url ?? '/'),
      // Fastify would take any request-id header as given; requestIdOf checks it first.
      requestIdHeader: false,
      genReqId: requestIdOf,
      // No route declares a JSON schema: Fastify's compilers are loaded if one ever does.
      schemaController: { compilersFactory: schemaCompilersOnFirstUse },
    });
    // Nest's own parsers would take JSON and forms on every route with the largest limit; Fastify's
    // JSON parser honours each route's limit, and hardenHttp adds the one raw-bytes parser.
    const app = await NestFactory.create<NestFastifyApplication>(
      AppModule.with({ db, feed, keys, config, log, apt, enrolmentPin: () => (certificate && !config.tls.proxy ? certificate.pin : undefined) }),
      adapter,
      {
        logger: new PinoNestLogger(log),
        abortOnError: false,
        bodyParser: false,
      },
    );
    const fastify = app.getHttpAdapter().getInstance();
    const writer = app.get(LedgerWriter);
    // onSend, not onRequest: it also runs for answers that a hook or an error produced.
    fastify.addHook('onSend', (req, reply, payload, done) => {
      void reply.header(REQUEST_ID_HEADER, req.id);
      done(null, payload);
    });
    await hardenHttp(fastify, app.get(AuthService), {
      treeLimit: config.bodyLimit,
      blobLimit: config.blobLimit,
      packageLimit: config.packageLimit,
      archiveLimit: config.archiveLimit,
      anonymousPerMinute: config.anonymousRateLimit,
      knownBody: (digest) => writer.knowsBody(digest),
    });
    app.get(PollRoute).register(fastify);
    registerAuditRoutes(fastify, config.mirror.gitdir, app.get(AuthService), log);
    registerConsoleRoutes(fastify, config.consoleDir, log);
    registerBackupRoute(fastify, db, { signingKeysFile: config.signingKeysFile, repoKeyFile: config.repoKeyFile }, app.get(AuthService), log);
    observeRequestLatency(fastify, app.get(Metrics));
    feed?.observeLag?.((seconds) => app.get(Metrics).notifications.received(seconds));
    fastify.addHook('onResponse', (req, reply, done) => {
      const level = req.url.endsWith('/bundle') ? 'debug' : 'info';
      // Polls are the bulk of the traffic: their line is not even assembled unless it is written.
      if (log.isLevelEnabled(level))
        log[level](
          { req_id: req.id, method: req.method, path: req.url.split('?')[0], client: req.ip, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
          'request',
        );
      done();
    });
    app.useGlobalFilters(new ProblemFilter(log));
    registerDocsRoutes(fastify);

    await app.listen(config.port, config.host);
    await writeBackStartUp(db);
    const address = fastify.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const url = `${certificate ? 'https' : 'http'}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    certificate?.watch(fastify.server as unknown as HttpsServer);
    const served = certificate?.current;
    const tls = served
      ? { tls: { subject: served.subject, fingerprint: served.fingerprint, valid_to: served.validTo, pin: served.pin }, behind_proxy: config.tls.proxy }
      : { tls: config.tls.proxy ? 'proxy' : 'off' };
    log.info({ url, database: db.kind, kid: keys.activeKid(), ...tls }, 'coordinator listening');
    return {
      app,
      url,
      db,
      firstAdminToken: firstAdmin?.token,
      firstAdminTokenFile: firstAdmin?.written.path,
      certificate,
      close: async () => {
        certificate?.close();
        await app.close();
        await feed?.close();
        await db.close();
      },
    };
  } catch (err) {
    await feed?.close().catch(() => undefined);
    await db.close().catch(() => undefined);
    throw err;
  }
}

/**
 * The first start on a database writes trust version 1; every start brings the key file in line
 * with the trust head (the signer, and keys revoked while this process was not running).
 */
async function settleTrust(db: Db, keys: SigningKeyStore): Promise<void> {
  const head = await db.kysely.transaction().execute(async (trx) => {
    await lockLedger(trx);
    return signingTrust(trx, keys);
  });
  await keys.settle(head.signingKid, head.doc.revoked);
}

/**
 * Under the ledger lock, so two replicas starting together create one admin token, not two; recorded
 * in the ledger like every other token, by the coordinator itself. The token's file is written
 * before the transaction commits (see writeFirstAdminToken): no committed token without its file.
 */
async function ensureFirstAdminToken(
  db: Db,
  keys: SigningKeyStore,
  dataDir: string,
  ttlSeconds: number | null,
): Promise<{ token: string; written: WrittenToken; expiresAt: Date | null } | undefined> {
  return db.kysely.transaction().execute(async (trx) => {
    await lockLedger(trx);
    if ((await countApiTokens(trx)) > 0) return undefined;
    // It expires like any token made without --ttl: nobody asked for one that never does.
    const now = new Date();
    const { token, expires_at } = await issueApiToken(
      trx,
      keys,
      { name: 'admin', role: 'admin', expiresAt: expiryOf({}, ttlSeconds, now) },
      'coordinator',
      now,
    );
    return { token, written: writeFirstAdminToken(dataDir, token), expiresAt: expires_at };
  });
}
