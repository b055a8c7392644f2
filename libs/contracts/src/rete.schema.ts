import { z } from 'zod';

/**
 * The operator's rete: a directory of YAML files that merge into one mesh description. Each file is
 * parsed against ReteFile on its own (so an error points into that file); libs/rete merges them and
 * checks the cross-references. Every leaf check carries a stable `params.code` so validation can
 * report `file:line:col: path: message [code]` and tests can assert on the code.
 */

/** Codes of everything `retectl validate` can report. Warnings never fail a run. */
export const RETE_ERROR_CODES = [
  'not_utf8',
  'yaml_syntax',
  'duplicate_key',
  'unknown_key',
  'missing_key',
  'wrong_type',
  'invalid_value',
  'bad_name',
  'bad_duration',
  'port_out_of_range',
  'bad_listen_address',
  'bad_url',
  'bad_reference',
  'duplicate_name',
  'duplicate_service',
  'duplicate_port',
  'unknown_node',
  'unknown_group',
  'unknown_tag',
  'unknown_service',
  'splay_too_long',
  'missing_mesh',
  'no_files',
] as const;
export type ReteErrorCode = (typeof RETE_ERROR_CODES)[number];
export const RETE_WARNING_CODES = ['unused_service', 'unused_group', 'empty_group', 'no_safety_net'] as const;
export type ReteWarningCode = (typeof RETE_WARNING_CODES)[number];

const coded = (code: ReteErrorCode, message: string) => ({ message, params: { code } });

export const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DNS_MESSAGE = 'must be a DNS label: 1-63 lowercase letters, digits or "-", not starting or ending with "-"';
export const ReteName = z.string().refine((s) => DNS_LABEL.test(s), coded('bad_name', DNS_MESSAGE));

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };
const DURATION = /^([0-9]{1,7}[smhd])+$/;
/** Seconds of a duration such as `90s`, `5m`, `1h30m`, `2d`; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(/([0-9]+)([smhd])/g)) total += Number(m[1]) * UNIT_SECONDS[m[2]];
  return total;
}
/** The longest duration a rete may hold: 30 days, far beyond any sensible poll interval. */
export const MAX_DURATION_SECONDS = 30 * 86400;
const Duration = (min: number) =>
  z
    .string()
    .refine((s) => parseDuration(s) !== undefined, coded('bad_duration', 'must be a duration such as 30s, 5m, 1h or 1h30m'))
    .refine((s) => {
      const v = parseDuration(s);
      return v === undefined || (v >= min && v <= MAX_DURATION_SECONDS);
    }, coded('bad_duration', `must be between ${min}s and 30d`));

export const ReteSync = z.strictObject({
  poll_interval: Duration(1).optional(),
  splay: Duration(0).optional(),
});

export const Port = z.number().int().refine((n) => n >= 1 && n <= 65535, coded('port_out_of_range', 'port must be 1-65535'));

const LISTEN = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/;
export const ReteListen = z
  .string()
  .refine((s) => LISTEN.test(s), coded('bad_listen_address', 'must be host:port (IPv6 hosts in brackets)'))
  .refine((s) => {
    const m = LISTEN.exec(s);
    return !m || (Number(m[2]) >= 1 && Number(m[2]) <= 65535);
  }, coded('port_out_of_range', 'port must be 1-65535'));

export const ReteService = z.strictObject({
  name: ReteName,
  port: Port,
  protocol: z.enum(['tcp', 'udp']).optional(),
});

export const ReteNode = z.strictObject({
  name: ReteName,
  kind: z.enum(['server', 'device']),
  listen: ReteListen,
  tags: z.array(ReteName).optional(),
  sync: ReteSync.optional(),
  services: z.array(ReteService).optional(),
  description: z.string().optional(),
});

export const ReteGroup = z.strictObject({
  name: ReteName,
  members: z.array(ReteName),
  description: z.string().optional(),
});

/** `alpha` (a node), `group:ops` or `tag:web`. */
export const ACL_SOURCE = /^(?:(group|tag):)?([^:]*)$/;
/** `alpha:web`: a service a node publishes. */
export const ACL_TARGET = /^([^:]+):([^:]+)$/;
export const ReteAclSource = z
  .string()
  .refine((s) => {
    const m = ACL_SOURCE.exec(s);
    return m !== null && DNS_LABEL.test(m[2]);
  }, coded('bad_reference', 'must be a node name, group:<name> or tag:<name>'));
export const ReteAclTarget = z
  .string()
  .refine((s) => {
    const m = ACL_TARGET.exec(s);
    return m !== null && DNS_LABEL.test(m[1]) && DNS_LABEL.test(m[2]);
  }, coded('bad_reference', 'must be <node>:<service>'));

export const ReteAclRule = z.strictObject({
  from: z.array(ReteAclSource).min(1),
  to: z.array(ReteAclTarget).min(1),
  description: z.string().optional(),
});

export const ReteMesh = z.strictObject({
  name: ReteName,
  coordinator: z
    .string()
    .refine((s) => {
      try {
        const u = new URL(s);
        return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '';
      } catch {
        return false;
      }
    }, coded('bad_url', 'must be an http(s) URL such as https://coordinator.example.net')),
  /**
   * How the operators reach the servers when the mesh is down (a provider console, a separate admin
   * VPN, …): a note for people, compiled into nothing. Without it, validation warns about servers that
   * publish SSH over the mesh, since a bad publish activates with no confirmation window.
   */
  safety_net: z
    .string()
    .refine((s) => s.trim() !== '', coded('invalid_value', 'must say how you reach the servers when the mesh is down, e.g. "cloud provider serial console"'))
    .optional(),
});

/** One YAML file of a rete. Every section is optional: a rete may split them over files and folders. */
export const ReteFile = z.strictObject({
  mesh: ReteMesh.optional(),
  defaults: z.strictObject({ sync: ReteSync.optional() }).optional(),
  nodes: z.array(ReteNode).optional(),
  groups: z.array(ReteGroup).optional(),
  acl: z.array(ReteAclRule).optional(),
});
export type ReteFile = z.infer<typeof ReteFile>;
export type ReteNode = z.infer<typeof ReteNode>;
export type ReteGroup = z.infer<typeof ReteGroup>;
export type ReteAclRule = z.infer<typeof ReteAclRule>;
export type ReteService = z.infer<typeof ReteService>;

/** Built-in sync defaults when the rete sets none. */
export const DEFAULT_POLL_INTERVAL = '5m';
export const DEFAULT_SPLAY = '30s';

/** retectl's config file in the user's config dir (mode 0600): where the coordinator is and the API token. */
export const RetectlConfig = z.strictObject({
  coordinator: z.string().optional(),
  token: z.string().min(1).optional(),
});
export type RetectlConfig = z.infer<typeof RetectlConfig>;
