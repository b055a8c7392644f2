import { isLoopbackHost } from '#tls';
import type { CoordinatorConfig } from '../config.js';

/**
 * Why the coordinator must not listen as configured, or undefined: plain HTTP is for this machine
 * only, unless the operator said a TLS proxy stands in front.
 */
export function cleartextListenRefusal(config: Pick<CoordinatorConfig, 'host' | 'tls'>): string | undefined {
  if (config.tls.certFile !== undefined || config.tls.proxy || isLoopbackHost(config.host)) return undefined;
  return (
    `HOST ${config.host} is not a loopback address, and without TLS the API tokens, enrolment tokens and node credentials would cross the network in clear. ` +
    'Either give the coordinator a certificate (FLORETE_TLS_CERT and FLORETE_TLS_KEY, PEM files), ' +
    'or put a TLS-terminating proxy in front and say so with FLORETE_TLS=proxy (FLORETE_TRUSTED_PROXIES: its addresses, for X-Forwarded-For)'
  );
}
