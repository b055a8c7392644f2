import { isIP } from 'node:net';

/** A URL's host without the brackets URL puts around an IPv6 address. */
const bare = (host: string): string => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host).toLowerCase();

/**
 * Whether a host is this machine's loopback: 127.0.0.0/8, ::1 (also IPv4-mapped) or the name
 * localhost. Any other name counts as remote: what it resolves to is the network's say, not ours.
 */
export function isLoopbackHost(host: string): boolean {
  const h = bare(host).replace(/\.$/, '');
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) {
    if (h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
    // IPv4-mapped, as written (::ffff:127.0.0.1) or as URL normalises it (::ffff:7f00:1).
    const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    if (dotted) return dotted[1].startsWith('127.');
    const hex = /^::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(h);
    return hex !== null && hex[1].padStart(4, '0').startsWith('7f');
  }
  return false;
}

/**
 * Why a secret must not go to this URL, or undefined when it may: https anywhere, http only to this
 * machine unless the operator said otherwise. Runs before any connection is made, so a refused
 * secret never leaves the process. `what` names the secret, `howToAllow` the explicit way past.
 */
export function cleartextRefusal(url: URL, what: string, howToAllow: string, allowed: boolean): string | undefined {
  if (url.protocol !== 'http:' || allowed || isLoopbackHost(url.hostname)) return undefined;
  return (
    `refusing to send the ${what} to ${url.origin} over plain http: anyone on the network path could read it and use it. ` +
    `Use an https:// URL, or ${howToAllow} if the path to ${bare(url.hostname)} is trusted; nothing was sent`
  );
}
