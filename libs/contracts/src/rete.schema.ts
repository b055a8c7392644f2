import { z } from 'zod';
import { FILE_MODE, isHostPath, PACKAGE_MANAGER_NAMES, PACKAGE_MANAGERS, POSIX_NAME } from './host.schema.js';
import { DNS_LABEL, parseDuration } from './plain.js';
import { MAX_BAKE_SECONDS, MAX_WAVES } from './rollout.schema.js';

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
  'bad_selector',
  'bad_path',
  'duplicate_path',
  'bad_mode',
  'bad_source',
  'bad_package_name',
  'bad_version',
  'conflicting_package',
  'too_many_artifacts',
  'bad_health_check',
  'bad_waves',
  'bad_share',
] as const;
export type ReteErrorCode = (typeof RETE_ERROR_CODES)[number];
export const RETE_WARNING_CODES = ['unused_service', 'unused_group', 'empty_group', 'no_safety_net'] as const;
export type ReteWarningCode = (typeof RETE_WARNING_CODES)[number];

const coded = (code: ReteErrorCode, message: string) => ({ message, params: { code } });

const DNS_MESSAGE = 'must be a DNS label: 1-63 lowercase letters, digits or "-", not starting or ending with "-"';
export const ReteName = z.string().refine((s) => DNS_LABEL.test(s), coded('bad_name', DNS_MESSAGE));

/** The longest duration a rete may hold: 30 days, far beyond any sensible poll interval. */
export const MAX_DURATION_SECONDS = 30 * 86400;
const Duration = (min: number, max = MAX_DURATION_SECONDS) =>
  z
    .string()
    .refine((s) => parseDuration(s) !== undefined, coded('bad_duration', 'must be a duration such as 30s, 5m, 1h or 1h30m'))
    .refine(
      (s) => {
        const v = parseDuration(s);
        return v === undefined || (v >= min && v <= max);
      },
      coded('bad_duration', `must be between ${min}s and ${max / 86400}d`),
    );

export const Port = z
  .number()
  .int()
  .refine((n) => n >= 1 && n <= 65535, coded('port_out_of_range', 'port must be 1-65535'));

const LISTEN = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/;
export const ReteListen = z
  .string()
  .refine((s) => LISTEN.test(s), coded('bad_listen_address', 'must be host:port (IPv6 hosts in brackets)'))
  .refine(
    (s) => {
      const m = LISTEN.exec(s);
      return !m || (Number(m[2]) >= 1 && Number(m[2]) <= 65535);
    },
    coded('port_out_of_range', 'port must be 1-65535'),
  );

export const ReteService = z.strictObject({
  name: ReteName,
  port: Port,
  protocol: z.enum(['tcp', 'udp']).optional(),
});

const HttpUrl = z.string().refine(
  (s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '';
    } catch {
      return false;
    }
  },
  coded('bad_url', 'must be an http(s) URL such as https://127.0.0.1:8443/healthz'),
);

/**
 * A health check the agent runs after activation, under a confirmation window: exactly one of
 * `command` (must exit 0), `tcp` (host:port must accept a connection) or `http` (a GET must answer
 * `expect_status`, 200 unless given); each gives up after `timeout` (10s unless given).
 */
export const ReteHealthCheck = z
  .strictObject({
    name: ReteName,
    command: z
      .string()
      .refine((s) => s.trim() !== '', coded('bad_health_check', 'must be a shell command'))
      .optional(),
    tcp: ReteListen.optional(),
    http: HttpUrl.optional(),
    expect_status: z
      .number()
      .int()
      .refine((n) => n >= 100 && n <= 599, coded('bad_health_check', 'must be an HTTP status, 100-599'))
      .optional(),
    timeout: Duration(1).optional(),
    description: z.string().optional(),
  })
  .superRefine((c, ctx) => {
    const kinds = [c.command, c.tcp, c.http].filter((k) => k !== undefined).length;
    if (kinds !== 1)
      ctx.addIssue({ code: 'custom', message: 'a health check takes exactly one of command, tcp or http', params: { code: 'bad_health_check' } });
    if (c.expect_status !== undefined && c.http === undefined) {
      ctx.addIssue({ code: 'custom', path: ['expect_status'], message: 'expect_status belongs to an http check', params: { code: 'bad_health_check' } });
    }
  });
export type ReteHealthCheck = z.infer<typeof ReteHealthCheck>;
/** A check's defaults when the rete gives none. */
export const DEFAULT_CHECK_TIMEOUT = '10s';
export const DEFAULT_EXPECT_STATUS = 200;

export const ReteSync = z.strictObject({
  poll_interval: Duration(1).optional(),
  splay: Duration(0).optional(),
  /** Commit-confirmed: how long a new set stays provisional before the agent reverts it unless confirmed. */
  confirm_within: Duration(10).optional(),
  /** Run after activation; a node's list replaces the defaults' list. */
  health_checks: z.array(ReteHealthCheck).optional(),
  /** Watch the bundle between polls (on unless turned off): a change arrives within a second instead of at the next poll. */
  watch: z.boolean().optional(),
});

/**
 * `source:` names a file of the rete by its path from the rete's root, as Puppet's `puppet:///modules/…`
 * names one from the module's: never from the host, never above the root. Whether it exists (and where
 * its symlinks lead) is checked by whoever can read the disk; this is the part one string can show.
 */
export const RETE_DOT_FOLDERS = ['.flor', '.git'];
export const ReteSourcePath = z.string().superRefine((s, ctx) => {
  const fail = (message: string) => ctx.addIssue({ code: 'custom', message, params: { code: 'bad_source' } });
  const segments = s.split('/').filter((seg) => seg !== '' && seg !== '.');
  if (s.startsWith('/')) fail('must be a path inside the rete, from its root (files/motd), not an absolute path');
  else if (segments.includes('..')) fail('must stay inside the rete: ".." is not allowed');
  else if (segments.length === 0) fail('must name a file inside the rete');
  else if (RETE_DOT_FOLDERS.includes(segments[0])) fail(`must not point into ${segments[0]}: it is not part of the rete`);
  else if (/[\u0000-\u001f\u007f]/.test(s)) fail('must not contain control characters');
});

export const ReteHostPath = z.string().refine(isHostPath, coded('bad_path', 'must be an absolute path without empty, "." or ".." segments or a trailing "/"'));

/** YAML reads an unquoted 0644 as the decimal number 644, so a mode must be a string. */
export const ReteFileMode = z.custom<string>().superRefine((v, ctx) => {
  if (typeof v === 'string' && FILE_MODE.test(v)) return;
  const message =
    typeof v === 'number'
      ? `must be a quoted octal string such as "0644": unquoted, YAML reads it as the number ${v}`
      : 'must be an octal mode such as "0644" or "0755"';
  ctx.addIssue({ code: 'custom', message, params: { code: 'bad_mode' } });
});

const RetePosixName = z
  .string()
  .refine(
    (s) => POSIX_NAME.test(s),
    coded('bad_name', 'must be a user or group name: lowercase letters, digits, "_" or "-", starting with a letter or "_", at most 32 characters'),
  );

export const ReteFileResource = z
  .strictObject({
    path: ReteHostPath,
    content: z.string().optional(),
    source: ReteSourcePath.optional(),
    mode: ReteFileMode.optional(),
    owner: RetePosixName.optional(),
    group: RetePosixName.optional(),
    description: z.string().optional(),
  })
  .superRefine((f, ctx) => {
    if (f.content === undefined && f.source === undefined) {
      ctx.addIssue({ code: 'custom', message: 'a file needs its bytes: "content" (inline) or "source" (a file of the rete)', params: { code: 'missing_key' } });
    } else if (f.content !== undefined && f.source !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['source'], message: 'a file takes "content" or "source", not both', params: { code: 'invalid_value' } });
    }
  });

export const RetePackage = z
  .strictObject({
    name: z.string(),
    version: z.string(),
    manager: z.enum(PACKAGE_MANAGER_NAMES).optional(),
    description: z.string().optional(),
  })
  .superRefine((p, ctx) => {
    const rules = PACKAGE_MANAGERS[p.manager ?? 'apt'];
    if (!rules.isName(p.name)) ctx.addIssue({ code: 'custom', path: ['name'], message: rules.nameRule, params: { code: 'bad_package_name' } });
    if (!rules.isVersion(p.version)) ctx.addIssue({ code: 'custom', path: ['version'], message: rules.versionRule, params: { code: 'bad_version' } });
  });

/** What a node's host must hold: `resources:` in a node, and each entry of the top-level `resources:`. */
const resourceLists = {
  files: z.array(ReteFileResource).optional(),
  packages: z.array(RetePackage).optional(),
};
export const ReteResources = z.strictObject(resourceLists);

/** Which nodes a top-level resources entry is for: those carrying any of the tags, in any of the groups, or named. */
export const ReteSelector = z
  .strictObject({
    tags: z.array(ReteName).min(1).optional(),
    groups: z.array(ReteName).min(1).optional(),
    nodes: z.array(ReteName).min(1).optional(),
  })
  .superRefine((s, ctx) => {
    const kinds = [s.tags, s.groups, s.nodes].filter((k) => k !== undefined).length;
    // One kind per selector: `{tags, groups}` would read as "and" to some and "or" to others.
    if (kinds !== 1) ctx.addIssue({ code: 'custom', message: 'must name exactly one of tags, groups or nodes', params: { code: 'bad_selector' } });
  });

export const ReteResourceBlock = z.strictObject({
  select: ReteSelector,
  description: z.string().optional(),
  ...resourceLists,
});

export const ReteNode = z.strictObject({
  name: ReteName,
  kind: z.enum(['server', 'device']),
  listen: ReteListen,
  tags: z.array(ReteName).optional(),
  sync: ReteSync.optional(),
  services: z.array(ReteService).optional(),
  resources: ReteResources.optional(),
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
export const ReteAclSource = z.string().refine(
  (s) => {
    const m = ACL_SOURCE.exec(s);
    return m !== null && DNS_LABEL.test(m[2]);
  },
  coded('bad_reference', 'must be a node name, group:<name> or tag:<name>'),
);
export const ReteAclTarget = z.string().refine(
  (s) => {
    const m = ACL_TARGET.exec(s);
    return m !== null && DNS_LABEL.test(m[1]) && DNS_LABEL.test(m[2]);
  },
  coded('bad_reference', 'must be <node>:<service>'),
);

export const ReteAclRule = z.strictObject({
  from: z.array(ReteAclSource).min(1),
  to: z.array(ReteAclTarget).min(1),
  description: z.string().optional(),
});

export const ReteMesh = z.strictObject({
  name: ReteName,
  coordinator: z.string().refine(
    (s) => {
      try {
        const u = new URL(s);
        return (u.protocol === 'https:' || u.protocol === 'http:') && u.hostname !== '';
      } catch {
        return false;
      }
    },
    coded('bad_url', 'must be an http(s) URL such as https://coordinator.example.net'),
  ),
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

const PERCENT = /^([0-9]{1,3}(?:\.[0-9]+)?)%$/;
/** A share as the rete writes it, `90%` or a fraction from 0 to 1 (`0.9`), from 0 to 1; undefined when it is not one. */
export function parseShare(value: unknown): number | undefined {
  if (typeof value === 'number') return value >= 0 && value <= 1 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const m = PERCENT.exec(value.trim());
  const n = m ? Number(m[1]) : NaN;
  return n <= 100 ? n / 100 : undefined;
}
const SHARE_RULE = 'must be a share: a percent such as "90%" or a fraction from 0 to 1 such as 0.9';
const ReteShare = z.custom<string | number>().superRefine((v, ctx) => {
  if (parseShare(v) !== undefined) return;
  const message = typeof v === 'number' ? `${SHARE_RULE}; write "${v}%" for ${v} percent` : SHARE_RULE;
  ctx.addIssue({ code: 'custom', message, params: { code: 'bad_share' } });
});

/** A failure budget as the rete writes it: a whole number is a count of nodes, anything else a share. */
export function parseFailureBudget(value: unknown): { count: number } | { share: number } | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return value >= 0 && value <= 1e9 ? { count: value } : undefined;
  const share = parseShare(value);
  return share === undefined ? undefined : { share };
}
const ReteFailureBudget = z.custom<string | number>().superRefine((v, ctx) => {
  if (parseFailureBudget(v) === undefined)
    ctx.addIssue({ code: 'custom', message: 'must be a count of nodes such as 2, or a share such as "5%" or 0.05', params: { code: 'bad_share' } });
});

/** A wave's cumulative share of the nodes after the canary, in whole percent: `10` or `"10%"`. */
export function parseWavePercent(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^[0-9]{1,3}%$/.test(value) ? Number(value.slice(0, -1)) : NaN;
  return Number.isInteger(n) && n >= 1 && n <= 100 ? n : undefined;
}
const ReteWaves = z
  .array(
    z.custom<string | number>().superRefine((v, ctx) => {
      if (parseWavePercent(v) === undefined)
        ctx.addIssue({ code: 'custom', message: 'must be a whole percent from 1 to 100, such as 10 or 10%', params: { code: 'bad_waves' } });
    }),
  )
  .min(1)
  .superRefine((waves, ctx) => {
    if (waves.length === 0) return;
    if (waves.length > MAX_WAVES)
      ctx.addIssue({ code: 'custom', message: `a rollout has at most ${MAX_WAVES} waves after its canary`, params: { code: 'bad_waves' } });
    const percents = waves.map(parseWavePercent);
    if (percents.some((p) => p === undefined)) return;
    percents.forEach((p, i) => {
      if (i > 0 && p! <= percents[i - 1]!) {
        ctx.addIssue({
          code: 'custom',
          path: [i],
          message: `the shares must increase: ${p}% does not come after ${percents[i - 1]}%`,
          params: { code: 'bad_waves' },
        });
      }
    });
    const last = percents[percents.length - 1]!;
    if (last !== 100)
      ctx.addIssue({
        code: 'custom',
        path: [waves.length - 1],
        message: `the last wave must reach 100%, every remaining node, not ${last}%`,
        params: { code: 'bad_waves' },
      });
  });

/**
 * The rollout plan a publish of this rete uses unless its command line says otherwise: the changed
 * nodes among `canary` first, then cumulative `waves` of the rest, each baked for `bake`. Compiled into
 * no node's set: it is how the content goes out, not what it is. Unset fields take the plan's defaults.
 */
export const ReteRollout = z.strictObject({
  canary: ReteSelector.optional(),
  waves: ReteWaves.optional(),
  bake: Duration(0, MAX_BAKE_SECONDS).optional(),
  failure_budget: ReteFailureBudget.optional(),
  confirm_share: ReteShare.optional(),
  on_halt: z.enum(['rollback', 'hold']).optional(),
  description: z.string().optional(),
});
export type ReteRollout = z.infer<typeof ReteRollout>;

/** One YAML file of a rete. Every section is optional: a rete may split them over files and folders. */
export const ReteFile = z.strictObject({
  mesh: ReteMesh.optional(),
  defaults: z.strictObject({ sync: ReteSync.optional() }).optional(),
  nodes: z.array(ReteNode).optional(),
  groups: z.array(ReteGroup).optional(),
  acl: z.array(ReteAclRule).optional(),
  resources: z.array(ReteResourceBlock).optional(),
  rollout: ReteRollout.optional(),
});
export type ReteFile = z.infer<typeof ReteFile>;
export type ReteFileResource = z.infer<typeof ReteFileResource>;
export type RetePackage = z.infer<typeof RetePackage>;
export type ReteResources = z.infer<typeof ReteResources>;
export type ReteResourceBlock = z.infer<typeof ReteResourceBlock>;
export type ReteNode = z.infer<typeof ReteNode>;
export type ReteGroup = z.infer<typeof ReteGroup>;
export type ReteAclRule = z.infer<typeof ReteAclRule>;
export type ReteService = z.infer<typeof ReteService>;

/** Built-in sync defaults when the rete sets none. */
export const DEFAULT_POLL_INTERVAL = '5m';
export const DEFAULT_SPLAY = '30s';
/** A file resource's defaults, as Puppet's and Ansible's: root-owned, readable by all. */
export const DEFAULT_FILE_MODE = '0644';
export const DEFAULT_FILE_OWNER = 'root';
export const DEFAULT_FILE_GROUP = 'root';

/** retectl's config file in the user's config dir (mode 0600): where the coordinator is and the API token. */
export const RetectlConfig = z.strictObject({
  coordinator: z.string().optional(),
  token: z.string().min(1).optional(),
  /** CA certificates (PEM) trusted for the coordinator's certificate instead of the system store. */
  ca_file: z.string().regex(/^\//, 'must be an absolute path').optional(),
  /** Send the API token over plain http to a coordinator that is not on this machine. */
  insecure_http: z.boolean().optional(),
});
export type RetectlConfig = z.infer<typeof RetectlConfig>;
