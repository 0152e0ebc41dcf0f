import { randomBytes } from "node:crypto";
import { request } from "undici";
import type { TestPlatform } from "./platform.js";

/**
 * The platform's HTTP surface as data: every endpoint family, the resources each needs in an account, and what
 * kind of body each endpoint reads. The hostile-input suite (core/http/hostile-input.test.ts) and the longer fuzzer
 * (scripts/fuzz-api.mjs) both walk this list, so a new endpoint added here is attacked by both.
 */

export type Family =
  | "identity"
  | "zones"
  | "zone_settings"
  | "cache_rules"
  | "cache_purge"
  | "dns_records"
  | "dns_transfers"
  | "kv"
  | "r2"
  | "d1"
  | "queues"
  | "workers"
  | "durable_objects"
  | "worker_tails"
  | "worker_assets"
  | "worker_schedules"
  | "worker_routes"
  | "ai_gateway"
  | "gateway_logs"
  | "gateway_traffic"
  | "worker_traffic"
  | "analytics";

/**
 * json: a JSON body the platform parses; multipart: multipart/form-data it parses; raw: bytes it stores as they
 * are; opaque: JSON it forwards without reading (the AI gateway's provider path); none: no body.
 */
export type BodyKind = "json" | "multipart" | "raw" | "opaque" | "none";

/** One account's resources, made by setUpAccounts. */
export interface AccountFixture {
  id: string;
  /** A token holding every permission on this account only. */
  token: string;
  namespace: string;
  bucket: string;
  zone: string;
  zoneName: string;
  record: string;
  gateway: string;
  /** A secondary zone (its incoming transfers point at `peer`). */
  secondaryZone: string;
  tsig: string;
  /** A primary at 127.0.0.1:9 (nothing listens there: a transfer fails at once instead of waiting). */
  peer: string;
  /** A spare API token on this account (not `token`): token management may roll or delete it. */
  spareToken: string;
  queue: string;
  /** The queue's http_pull consumer. */
  consumer: string;
  database: string;
  /** A deployed worker (in the first account only: each costs a workerd process). */
  script?: string;
}

/** Fixture fields that name one resource each, which an endpoint may delete (see Endpoint.destroys). */
export type ResourceField = Exclude<keyof AccountFixture, "id" | "token" | "zoneName">;

export interface Endpoint {
  family: Family;
  method: string;
  /** Path under /client/v4 (api) or on the edge port (edge, with an optional Host). */
  base: "api" | "edge";
  path: (f: AccountFixture) => string;
  body: BodyKind;
  /** A well-formed body, the starting point for mutations. */
  sample?: (f: AccountFixture) => unknown;
  /** Reads page/per_page. */
  paginated?: { maxPerPage: number };
  /** Sent with this Host (worker traffic). */
  host?: (f: AccountFixture) => string | undefined;
  /**
   * The fixture this endpoint deletes (or makes unusable) when it succeeds. The fuzzer sends it with that resource
   * replaced by one that does not exist, so that one lucky request does not leave the rest of the run with 404s.
   */
  destroys?: ResourceField;
  /**
   * The refusal this endpoint answers when an upstream the tenant named fails (a DNS primary that does not answer):
   * a 5xx that reports someone else's server, not a fault of ours. The fuzzer counts these apart.
   */
  upstreamFailure?: { status: number; code: number };
}

const acct = (f: AccountFixture) => `/accounts/${f.id}`;
/** A Cache Rules ruleset (and rule) id no zone has. */
const RULESET = "0".repeat(32);
const kv = (f: AccountFixture) => `${acct(f)}/storage/kv/namespaces`;
const gw = (f: AccountFixture) => `${acct(f)}/ai-gateway/gateways`;
const script = (f: AccountFixture) => `${acct(f)}/workers/scripts/${f.script ?? "none"}`;
const d1 = (f: AccountFixture) => `${acct(f)}/d1/database`;
const outgoing = (f: AccountFixture) => `/zones/${f.zone}/secondary_dns/outgoing`;
const incoming = (f: AccountFixture) => `/zones/${f.secondaryZone}/secondary_dns/incoming`;
/** A GET of a path, with no body. */
const read = (family: Family, path: (f: AccountFixture) => string, more: Partial<Endpoint> = {}): Endpoint => ({
  family,
  method: "GET",
  base: "api",
  path,
  body: "none",
  ...more,
});
const remove = (family: Family, path: (f: AccountFixture) => string, destroys?: ResourceField): Endpoint => ({
  family,
  method: "DELETE",
  base: "api",
  path,
  body: "none",
  ...(destroys ? { destroys } : {}),
});
const send = (
  family: Family,
  method: string,
  path: (f: AccountFixture) => string,
  sample: (f: AccountFixture) => unknown,
  more: Partial<Endpoint> = {},
): Endpoint => ({
  family,
  method,
  base: "api",
  path,
  body: "json",
  sample,
  ...more,
});
/** Queues answer under /queues and under /workers/queues (older wrangler releases): the same routes. */
const queueEndpoints = (base: (f: AccountFixture) => string): Endpoint[] => {
  const queue = (f: AccountFixture) => `${base(f)}/${f.queue}`;
  const consumer = (f: AccountFixture) => `${queue(f)}/consumers/${f.consumer}`;
  const pullSettings = { type: "http_pull", settings: { batch_size: 10, visibility_timeout_ms: 1000 } };
  return [
    read("queues", base, { paginated: { maxPerPage: 1000 } }),
    send("queues", "POST", base, () => ({ queue_name: "fuzz-queue" })),
    read("queues", queue),
    send("queues", "PUT", queue, (f) => ({ queue_name: `q-${f.id.slice(0, 8)}` })),
    send("queues", "PATCH", queue, (f) => ({ queue_name: `q-${f.id.slice(0, 8)}` })),
    remove("queues", queue, "queue"),
    read("queues", (f) => `${queue(f)}/consumers`),
    send(
      "queues",
      "POST",
      (f) => `${queue(f)}/consumers`,
      () => pullSettings,
    ),
    read("queues", consumer),
    send("queues", "PUT", consumer, () => pullSettings),
    remove("queues", consumer, "consumer"),
    read("queues", (f) => `${queue(f)}/metrics`),
    send(
      "queues",
      "POST",
      (f) => `${queue(f)}/messages`,
      () => ({ body: { fuzz: 1 }, content_type: "json" }),
    ),
    send(
      "queues",
      "POST",
      (f) => `${queue(f)}/messages/batch`,
      () => ({ messages: [{ body: "x", content_type: "text" }], delay_seconds: 0 }),
    ),
    send(
      "queues",
      "POST",
      (f) => `${queue(f)}/messages/pull`,
      () => ({ batch_size: 5, visibility_timeout_ms: 1000 }),
    ),
    send(
      "queues",
      "POST",
      (f) => `${queue(f)}/messages/ack`,
      () => ({ acks: [{ lease_id: "x" }], retries: [] }),
    ),
    send(
      "queues",
      "POST",
      (f) => `${queue(f)}/purge`,
      () => ({ delete_messages_permanently: true }),
    ),
    read("queues", (f) => `${queue(f)}/purge`),
  ];
};
const chat = { model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] };

export const ENDPOINTS: readonly Endpoint[] = [
  { family: "identity", method: "GET", base: "api", path: () => "/user", body: "none" },
  { family: "identity", method: "GET", base: "api", path: () => "/user/tokens", body: "none", paginated: { maxPerPage: 50 } },
  {
    family: "identity",
    method: "POST",
    base: "api",
    path: () => "/user/tokens",
    body: "json",
    sample: (f) => ({ name: "fuzz", permissions: ["dns_read"], account_id: f.id }),
  },
  { family: "identity", method: "GET", base: "api", path: (f) => `${acct(f)}/tokens`, body: "none", paginated: { maxPerPage: 50 } },
  {
    family: "identity",
    method: "POST",
    base: "api",
    path: (f) => `${acct(f)}/tokens`,
    body: "json",
    sample: () => ({ name: "fuzz", permissions: ["kv_read"] }),
  },
  { family: "identity", method: "GET", base: "api", path: () => "/accounts", body: "none", paginated: { maxPerPage: 50 } },
  { family: "identity", method: "GET", base: "api", path: () => "/memberships", body: "none", paginated: { maxPerPage: 50 } },
  send(
    "identity",
    "POST",
    () => "/accounts",
    () => ({ name: "fuzz" }),
  ),
  read("identity", acct),
  read("identity", () => "/user/tokens/verify"),
  read("identity", () => "/user/tokens/permission_groups"),
  read("identity", (f) => `/user/tokens/${f.spareToken}`),
  send(
    "identity",
    "PUT",
    (f) => `/user/tokens/${f.spareToken}`,
    (f) => ({ name: "spare", permissions: ["dns_read"], account_id: f.id }),
  ),
  send(
    "identity",
    "PUT",
    (f) => `/user/tokens/${f.spareToken}/value`,
    () => ({}),
    { destroys: "spareToken" },
  ),
  remove("identity", (f) => `/user/tokens/${f.spareToken}`, "spareToken"),
  read("identity", (f) => `${acct(f)}/tokens/verify`),
  read("identity", (f) => `${acct(f)}/tokens/permission_groups`),
  read("identity", (f) => `${acct(f)}/tokens/${f.spareToken}`),
  send(
    "identity",
    "PUT",
    (f) => `${acct(f)}/tokens/${f.spareToken}`,
    () => ({ name: "spare", permissions: ["dns_read"] }),
  ),
  send(
    "identity",
    "PUT",
    (f) => `${acct(f)}/tokens/${f.spareToken}/value`,
    () => ({}),
    { destroys: "spareToken" },
  ),
  remove("identity", (f) => `${acct(f)}/tokens/${f.spareToken}`, "spareToken"),

  { family: "zones", method: "GET", base: "api", path: () => "/zones", body: "none", paginated: { maxPerPage: 1000 } },
  {
    family: "zones",
    method: "POST",
    base: "api",
    path: () => "/zones",
    body: "json",
    sample: (f) => ({ name: `fz-${f.id.slice(0, 6)}.example`, account: { id: f.id } }),
  },
  { family: "zones", method: "GET", base: "api", path: (f) => `/zones/${f.zone}`, body: "none" },
  { family: "zones", method: "PATCH", base: "api", path: (f) => `/zones/${f.zone}`, body: "json", sample: () => ({ paused: false }) },
  remove("zones", (f) => `/zones/${f.zone}`, "zone"),

  { family: "dns_records", method: "GET", base: "api", path: (f) => `/zones/${f.zone}/dns_records`, body: "none", paginated: { maxPerPage: 5_000_000 } },
  {
    family: "dns_records",
    method: "POST",
    base: "api",
    path: (f) => `/zones/${f.zone}/dns_records`,
    body: "json",
    sample: (f) => ({ type: "A", name: `fuzz.${f.zoneName}`, content: "198.51.100.7", ttl: 300 }),
  },
  {
    family: "dns_records",
    method: "PATCH",
    base: "api",
    path: (f) => `/zones/${f.zone}/dns_records/${f.record}`,
    body: "json",
    sample: () => ({ comment: "fuzz", ttl: 600 }),
  },
  read("dns_records", (f) => `/zones/${f.zone}/dns_records/${f.record}`),
  send(
    "dns_records",
    "PUT",
    (f) => `/zones/${f.zone}/dns_records/${f.record}`,
    (f) => ({ type: "A", name: `www.${f.zoneName}`, content: "198.51.100.2", ttl: 300 }),
  ),
  remove("dns_records", (f) => `/zones/${f.zone}/dns_records/${f.record}`, "record"),
  read("dns_records", (f) => `/zones/${f.zone}/dns_records/export`),
  read("dns_records", (f) => `/zones/${f.zone}/dns_settings`),
  read("dns_records", (f) => `${acct(f)}/dns_settings`),
  send(
    "dns_records",
    "PATCH",
    (f) => `${acct(f)}/dns_settings`,
    () => ({ zone_defaults: { soa: { refresh: 7200 } } }),
  ),
  {
    family: "dns_records",
    method: "POST",
    base: "api",
    path: (f) => `/zones/${f.zone}/dns_records/batch`,
    body: "json",
    sample: (f) => ({ posts: [{ type: "TXT", name: `batch.${f.zoneName}`, content: '"x"', ttl: 300 }] }),
  },
  { family: "dns_records", method: "POST", base: "api", path: (f) => `/zones/${f.zone}/dns_records/import`, body: "multipart" },
  {
    family: "dns_records",
    method: "PATCH",
    base: "api",
    path: (f) => `/zones/${f.zone}/dns_settings`,
    body: "json",
    sample: () => ({ soa: { refresh: 7200 } }),
  },
  // Zone settings (src/edge/settings/routes.ts)
  read("zone_settings", (f) => `/zones/${f.zone}/settings`),
  send(
    "zone_settings",
    "PATCH",
    (f) => `/zones/${f.zone}/settings`,
    () => ({ items: [{ id: "websockets", value: "on" }] }),
  ),
  read("zone_settings", (f) => `/zones/${f.zone}/settings/ssl`),
  send(
    "zone_settings",
    "PATCH",
    (f) => `/zones/${f.zone}/settings/ssl`,
    () => ({ value: "flexible" }),
  ),
  // Purge (src/edge/cache/routes.ts): everything of the fixture zone (it caches nothing the tests need).
  send(
    "cache_purge",
    "POST",
    (f) => `/zones/${f.zone}/purge_cache`,
    () => ({ purge_everything: true }),
  ),
  // Cache Rules (src/edge/rules/routes.ts): the ruleset id is a fixed one no zone has (answered 404 where it is needed)
  read("cache_rules", (f) => `/zones/${f.zone}/rulesets/phases/http_request_cache_settings/entrypoint`),
  send(
    "cache_rules",
    "PUT",
    (f) => `/zones/${f.zone}/rulesets/phases/http_request_cache_settings/entrypoint`,
    () => ({ rules: [{ expression: 'http.request.uri.path.extension eq "css"', action: "set_cache_settings", action_parameters: { cache: true } }] }),
  ),
  read("cache_rules", (f) => `/zones/${f.zone}/rulesets`),
  send(
    "cache_rules",
    "POST",
    (f) => `/zones/${f.zone}/rulesets`,
    () => ({ kind: "zone", phase: "http_request_cache_settings", name: "fuzz", rules: [] }),
  ),
  read("cache_rules", (f) => `/zones/${f.zone}/rulesets/${RULESET}`),
  send(
    "cache_rules",
    "PUT",
    (f) => `/zones/${f.zone}/rulesets/${RULESET}`,
    () => ({ rules: [] }),
  ),
  remove("cache_rules", (f) => `/zones/${f.zone}/rulesets/${RULESET}`),
  send(
    "cache_rules",
    "POST",
    (f) => `/zones/${f.zone}/rulesets/${RULESET}/rules`,
    () => ({ expression: 'http.host eq "a"', action: "set_cache_settings", action_parameters: { cache: false } }),
  ),
  send(
    "cache_rules",
    "PATCH",
    (f) => `/zones/${f.zone}/rulesets/${RULESET}/rules/${RULESET}`,
    () => ({ enabled: false }),
  ),
  remove("cache_rules", (f) => `/zones/${f.zone}/rulesets/${RULESET}/rules/${RULESET}`),
  // Zone transfers (src/dns/transfers/routes.ts)
  {
    family: "zones",
    method: "POST",
    base: "api",
    path: (f) => `${acct(f)}/secondary_dns/tsigs`,
    body: "json",
    sample: () => ({ name: "fuzz-key.", algo: "hmac-sha256.", secret: randomBytes(32).toString("base64") }),
  },
  {
    family: "zones",
    method: "POST",
    base: "api",
    path: (f) => `${acct(f)}/secondary_dns/peers`,
    body: "json",
    sample: () => ({ name: "fuzz", ip: "192.0.2.53" }),
  },
  { family: "zones", method: "PUT", base: "api", path: (f) => `/zones/${f.zone}/secondary_dns/outgoing`, body: "json", sample: () => ({ peers: [] }) },
  read("dns_transfers", (f) => `${acct(f)}/secondary_dns/tsigs`),
  read("dns_transfers", (f) => `${acct(f)}/secondary_dns/tsigs/${f.tsig}`),
  send(
    "dns_transfers",
    "PUT",
    (f) => `${acct(f)}/secondary_dns/tsigs/${f.tsig}`,
    () => ({ name: "renamed-key.", algo: "hmac-sha256." }),
  ),
  remove("dns_transfers", (f) => `${acct(f)}/secondary_dns/tsigs/${f.tsig}`, "tsig"),
  read("dns_transfers", (f) => `${acct(f)}/secondary_dns/peers`),
  read("dns_transfers", (f) => `${acct(f)}/secondary_dns/peers/${f.peer}`),
  send(
    "dns_transfers",
    "PUT",
    (f) => `${acct(f)}/secondary_dns/peers/${f.peer}`,
    () => ({ name: "fuzz", ip: "127.0.0.1", port: 9 }),
  ),
  remove("dns_transfers", (f) => `${acct(f)}/secondary_dns/peers/${f.peer}`, "peer"),
  read("dns_transfers", outgoing),
  send("dns_transfers", "POST", outgoing, () => ({ peers: [] })),
  remove("dns_transfers", outgoing),
  read("dns_transfers", (f) => `${outgoing(f)}/status`),
  { family: "dns_transfers", method: "POST", base: "api", path: (f) => `${outgoing(f)}/enable`, body: "none" },
  { family: "dns_transfers", method: "POST", base: "api", path: (f) => `${outgoing(f)}/disable`, body: "none" },
  { family: "dns_transfers", method: "POST", base: "api", path: (f) => `${outgoing(f)}/force_notify`, body: "none" },
  read("dns_transfers", incoming),
  send("dns_transfers", "POST", incoming, (f) => ({ peers: [f.peer], auto_refresh_seconds: 86400 })),
  send("dns_transfers", "PUT", incoming, (f) => ({ peers: [f.peer], auto_refresh_seconds: 3600 })),
  remove("dns_transfers", incoming),
  // Waits for the transfer from the zone's primary (the fixture's peer refuses connections): 502 when it fails.
  {
    family: "dns_transfers",
    method: "POST",
    base: "api",
    path: (f) => `/zones/${f.secondaryZone}/secondary_dns/force_axfr`,
    body: "none",
    // DNS's TransferCodes.transferFailed, written out: core's tests name no area's files (the answer is compared to
    // it, so a change of the code fails the surface check rather than drifting).
    upstreamFailure: { status: 502, code: 9605 },
  },
  { family: "dns_records", method: "GET", base: "api", path: (f) => `/zones/${f.zone}/dnssec`, body: "none" },
  { family: "dns_records", method: "PATCH", base: "api", path: (f) => `/zones/${f.zone}/dnssec`, body: "json", sample: () => ({ status: "disabled" }) },
  remove("dns_records", (f) => `/zones/${f.zone}/dnssec`),
  send(
    "dns_records",
    "POST",
    (f) => `/zones/${f.zone}/dnssec/rollover`,
    () => ({ key: "zsk" }),
  ),

  { family: "kv", method: "GET", base: "api", path: kv, body: "none", paginated: { maxPerPage: 1000 } },
  { family: "kv", method: "POST", base: "api", path: kv, body: "json", sample: () => ({ title: "fuzz" }) },
  { family: "kv", method: "PUT", base: "api", path: (f) => `${kv(f)}/${f.namespace}`, body: "json", sample: () => ({ title: "renamed" }) },
  { family: "kv", method: "GET", base: "api", path: (f) => `${kv(f)}/${f.namespace}/keys`, body: "none" },
  read("kv", (f) => `${kv(f)}/${f.namespace}`),
  remove("kv", (f) => `${kv(f)}/${f.namespace}`, "namespace"),
  read("kv", (f) => `${kv(f)}/${f.namespace}/values/raw-key`),
  read("kv", (f) => `${kv(f)}/${f.namespace}/metadata/fuzz-key`),
  remove("kv", (f) => `${kv(f)}/${f.namespace}/values/raw-key`),
  send(
    "kv",
    "DELETE",
    (f) => `${kv(f)}/${f.namespace}/bulk`,
    () => ["b1"],
  ),
  { family: "kv", method: "PUT", base: "api", path: (f) => `${kv(f)}/${f.namespace}/values/fuzz-key`, body: "multipart" },
  { family: "kv", method: "PUT", base: "api", path: (f) => `${kv(f)}/${f.namespace}/values/raw-key`, body: "raw" },
  {
    family: "kv",
    method: "PUT",
    base: "api",
    path: (f) => `${kv(f)}/${f.namespace}/bulk`,
    body: "json",
    sample: () => [{ key: "b1", value: "v", metadata: { a: 1 } }],
  },
  { family: "kv", method: "POST", base: "api", path: (f) => `${kv(f)}/${f.namespace}/bulk/get`, body: "json", sample: () => ({ keys: ["b1"], type: "json" }) },
  { family: "kv", method: "POST", base: "api", path: (f) => `${kv(f)}/${f.namespace}/bulk/delete`, body: "json", sample: () => ["b1"] },

  { family: "r2", method: "GET", base: "api", path: (f) => `${acct(f)}/r2/buckets`, body: "none" },
  { family: "r2", method: "POST", base: "api", path: (f) => `${acct(f)}/r2/buckets`, body: "json", sample: () => ({ name: "fuzz-bucket" }) },
  { family: "r2", method: "GET", base: "api", path: (f) => `${acct(f)}/r2/buckets/${f.bucket}/objects`, body: "none" },
  { family: "r2", method: "PUT", base: "api", path: (f) => `${acct(f)}/r2/buckets/${f.bucket}/objects/fuzz/key`, body: "raw" },
  read("r2", (f) => `${acct(f)}/r2/buckets/${f.bucket}`),
  {
    family: "r2",
    method: "PATCH",
    base: "api",
    path: (f) => `${acct(f)}/r2/buckets/${f.bucket}`,
    body: "none",
  },
  remove("r2", (f) => `${acct(f)}/r2/buckets/${f.bucket}`, "bucket"),
  read("r2", (f) => `${acct(f)}/r2/buckets/${f.bucket}/objects/fuzz/key`),
  remove("r2", (f) => `${acct(f)}/r2/buckets/${f.bucket}/objects/fuzz/key`),
  read("r2", (f) => `${acct(f)}/r2/buckets/${f.bucket}/cors`),
  send(
    "r2",
    "PUT",
    (f) => `${acct(f)}/r2/buckets/${f.bucket}/cors`,
    () => ({ rules: [{ allowed: { origins: ["https://fuzz.example"], methods: ["GET"] } }] }),
  ),
  remove("r2", (f) => `${acct(f)}/r2/buckets/${f.bucket}/cors`),
  read("r2", (f) => `${acct(f)}/r2/buckets/${f.bucket}/lifecycle`),
  send(
    "r2",
    "PUT",
    (f) => `${acct(f)}/r2/buckets/${f.bucket}/lifecycle`,
    () => ({ rules: [] }),
  ),
  send(
    "analytics",
    "POST",
    () => "/graphql",
    (f) => ({
      query: "query q($a: String) { viewer { accounts(filter: {accountTag: $a}) { r2StorageAdaptiveGroups(limit: 1) { max { objectCount } } } } }",
      variables: { a: f.id },
    }),
  ),
  // Event notification rules of the bucket, per queue of the account.
  read("r2", (f) => `${acct(f)}/event_notifications/r2/${f.bucket}/configuration`),
  read("r2", (f) => `${acct(f)}/event_notifications/r2/${f.bucket}/configuration/queues/${f.queue}`),
  send(
    "r2",
    "PUT",
    (f) => `${acct(f)}/event_notifications/r2/${f.bucket}/configuration/queues/${f.queue}`,
    () => ({
      rules: [{ actions: ["PutObject"], prefix: "fuzz/", suffix: ".txt", description: "fuzz" }],
    }),
  ),
  remove("r2", (f) => `${acct(f)}/event_notifications/r2/${f.bucket}/configuration/queues/${f.queue}`),

  read("d1", d1, { paginated: { maxPerPage: 10000 } }),
  send("d1", "POST", d1, () => ({ name: "fuzz-db" })),
  read("d1", (f) => `${d1(f)}/${f.database}`),
  remove("d1", (f) => `${d1(f)}/${f.database}`, "database"),
  send(
    "d1",
    "POST",
    (f) => `${d1(f)}/${f.database}/query`,
    () => ({ sql: "SELECT ?1 AS x", params: [1] }),
  ),
  send(
    "d1",
    "POST",
    (f) => `${d1(f)}/${f.database}/raw`,
    () => ({ batch: [{ sql: "SELECT 1" }, { sql: "SELECT ?1", params: ["a"] }] }),
  ),
  send(
    "d1",
    "POST",
    (f) => `${d1(f)}/${f.database}/export`,
    () => ({ output_format: "polling", dump_options: { no_data: true } }),
  ),
  send(
    "d1",
    "POST",
    (f) => `${d1(f)}/${f.database}/import`,
    () => ({ action: "init", etag: "0".repeat(32) }),
  ),

  ...queueEndpoints((f) => `${acct(f)}/queues`),
  ...queueEndpoints((f) => `${acct(f)}/workers/queues`),

  { family: "workers", method: "GET", base: "api", path: (f) => `${acct(f)}/workers/scripts`, body: "none" },
  { family: "workers", method: "PUT", base: "api", path: (f) => `${acct(f)}/workers/scripts/fuzz-script`, body: "multipart" },
  {
    family: "workers",
    method: "PUT",
    base: "api",
    path: (f) => `${acct(f)}/workers/scripts/${f.script ?? "none"}/secrets`,
    body: "json",
    sample: () => ({ name: "S", text: "x", type: "secret_text" }),
  },
  { family: "workers", method: "POST", base: "api", path: (f) => `${acct(f)}/workers/scripts/fuzz-script/versions`, body: "multipart" },
  read("workers", script),
  remove("workers", script, "script"),
  remove("workers", (f) => `${acct(f)}/workers/services/${f.script ?? "none"}`, "script"),
  read("workers", (f) => `${acct(f)}/workers/services/${f.script ?? "none"}`),
  read("workers", (f) => `${acct(f)}/workers/workers/${f.script ?? "none"}`),
  read("workers", (f) => `${script(f)}/versions`),
  read("workers", (f) => `${script(f)}/versions/${"0".repeat(8)}-0000-4000-8000-${"0".repeat(12)}`),
  read("workers", (f) => `${script(f)}/deployments`),
  send(
    "workers",
    "POST",
    (f) => `${script(f)}/deployments`,
    () => ({ strategy: "percentage", versions: [{ version_id: "0".repeat(32), percentage: 100 }] }),
  ),
  read("workers", (f) => `${script(f)}/settings`),
  read("workers", (f) => `${script(f)}/content/v2`),
  send(
    "workers",
    "PATCH",
    (f) => `${script(f)}/script-settings`,
    () => ({ logpush: false }),
  ),
  read("workers", (f) => `${script(f)}/script-settings`),
  // Workers Logs: the hosted query API's three calls, each with a body it takes.
  send(
    "workers",
    "POST",
    (f) => `${acct(f)}/workers/observability/telemetry/query`,
    () => ({
      queryId: "surface",
      timeframe: { from: 0, to: 3_600_000 },
      view: "events",
      limit: 10,
    }),
  ),
  send(
    "workers",
    "POST",
    (f) => `${acct(f)}/workers/observability/telemetry/keys`,
    () => ({ datasets: [], filters: [] }),
  ),
  send(
    "workers",
    "POST",
    (f) => `${acct(f)}/workers/observability/telemetry/values`,
    () => ({
      datasets: [],
      key: "$metadata.service",
      timeframe: { from: 0, to: 3_600_000 },
      type: "string",
      filters: [],
    }),
  ),
  read("workers", (f) => `${script(f)}/references`),
  read("workers", (f) => `${acct(f)}/workers/tails/by-consumer/${f.script ?? "none"}`),
  read("workers", (f) => `${script(f)}/subdomain`),
  send(
    "workers",
    "POST",
    (f) => `${script(f)}/subdomain`,
    () => ({ enabled: true }),
  ),
  read("workers", (f) => `${acct(f)}/workers/subdomain`),
  send(
    "workers",
    "PUT",
    (f) => `${acct(f)}/workers/subdomain`,
    () => ({ subdomain: "fuzz" }),
  ),
  read("workers", (f) => `${script(f)}/secrets`),
  read("workers", (f) => `${script(f)}/secrets/S`),
  remove("workers", (f) => `${script(f)}/secrets/S`),

  read("worker_schedules", (f) => `${script(f)}/schedules`),
  send(
    "worker_schedules",
    "PUT",
    (f) => `${script(f)}/schedules`,
    () => [{ cron: "*/30 * * * *" }],
  ),

  read("worker_routes", (f) => `/zones/${f.zone}/workers/routes`),
  send(
    "worker_routes",
    "POST",
    (f) => `/zones/${f.zone}/workers/routes`,
    (f) => ({ pattern: `fuzz.${f.zoneName}/*`, script: f.script ?? "none" }),
  ),
  read("worker_routes", (f) => `/zones/${f.zone}/workers/routes/${"0".repeat(32)}`),
  send(
    "worker_routes",
    "PUT",
    (f) => `/zones/${f.zone}/workers/routes/${"0".repeat(32)}`,
    (f) => ({ pattern: `fuzz2.${f.zoneName}/*` }),
  ),
  remove("worker_routes", (f) => `/zones/${f.zone}/workers/routes/${"0".repeat(32)}`),
  read("worker_routes", (f) => `${script(f)}/routes`),
  send(
    "worker_routes",
    "PUT",
    (f) => `${script(f)}/routes`,
    (f) => [{ pattern: `fuzz3.${f.zoneName}/*`, zone_name: f.zoneName }],
  ),
  ...["domains", "domains/records"].flatMap((path) => [
    read("worker_routes", (f) => `${acct(f)}/workers/${path}`),
    read("worker_routes", (f) => `${acct(f)}/workers/${path}/${"0".repeat(32)}`),
    remove("worker_routes", (f) => `${acct(f)}/workers/${path}/${"0".repeat(32)}`),
  ]),
  send(
    "worker_routes",
    "PUT",
    (f) => `${acct(f)}/workers/domains`,
    (f) => ({ hostname: `fuzz.${f.zoneName}`, service: f.script ?? "none", environment: "production", zone_id: f.zone }),
  ),
  send(
    "worker_routes",
    "PUT",
    (f) => `${script(f)}/domains/records`,
    (f) => ({ override_scope: true, override_existing_origin: false, override_existing_dns_record: false, origins: [{ hostname: `fuzz2.${f.zoneName}` }] }),
  ),

  read("worker_tails", (f) => `${script(f)}/tails`),
  send(
    "worker_tails",
    "POST",
    (f) => `${script(f)}/tails`,
    () => ({ filters: [] }),
  ),
  remove("worker_tails", (f) => `${script(f)}/tails/${"0".repeat(32)}`),

  send(
    "worker_assets",
    "POST",
    (f) => `${script(f)}/assets-upload-session`,
    () => ({ manifest: { "/index.html": { hash: "0".repeat(32), size: 5 } } }),
  ),
  // Authenticated by an upload session's token, not an API token: every token the callers hold is refused.
  { family: "worker_assets", method: "POST", base: "api", path: (f) => `${acct(f)}/workers/assets/upload`, body: "multipart" },

  read("durable_objects", (f) => `${acct(f)}/workers/durable_objects/namespaces`, { paginated: { maxPerPage: 1000 } }),
  read("durable_objects", (f) => `${acct(f)}/workers/durable_objects/namespaces/${"0".repeat(32)}/objects`),

  { family: "ai_gateway", method: "GET", base: "api", path: gw, body: "none", paginated: { maxPerPage: 100 } },
  read("ai_gateway", (f) => `${gw(f)}/${f.gateway}`),
  remove("ai_gateway", (f) => `${gw(f)}/${f.gateway}`, "gateway"),
  {
    family: "ai_gateway",
    method: "POST",
    base: "api",
    path: gw,
    body: "json",
    sample: () => ({ id: "fuzz-gw", cache_ttl: 0, cache_invalidate_on_update: false, collect_logs: true, rate_limiting_interval: 0, rate_limiting_limit: 0 }),
  },
  {
    family: "ai_gateway",
    method: "PUT",
    base: "api",
    path: (f) => `${gw(f)}/${f.gateway}`,
    body: "json",
    sample: () => ({ cache_ttl: 0, cache_invalidate_on_update: false, collect_logs: true, rate_limiting_interval: 0, rate_limiting_limit: 0 }),
  },

  // Stored provider keys (BYOK): every method needs AI Gateway Edit.
  read("ai_gateway", (f) => `${gw(f)}/${f.gateway}/provider_configs`, { paginated: { maxPerPage: 100 } }),
  read("ai_gateway", (f) => `${gw(f)}/${f.gateway}/provider_configs/${"0".repeat(32)}`),
  send(
    "ai_gateway",
    "POST",
    (f) => `${gw(f)}/${f.gateway}/provider_configs`,
    () => ({ provider_slug: "openai", alias: "fuzz", default_config: false, secret: "sk-fuzz" }),
  ),
  send(
    "ai_gateway",
    "PUT",
    (f) => `${gw(f)}/${f.gateway}/provider_configs/${"0".repeat(32)}`,
    () => ({ secret: "sk-fuzz-2" }),
  ),
  remove("ai_gateway", (f) => `${gw(f)}/${f.gateway}/provider_configs/${"0".repeat(32)}`),

  { family: "gateway_logs", method: "GET", base: "api", path: (f) => `${gw(f)}/${f.gateway}/logs`, body: "none", paginated: { maxPerPage: 50 } },
  { family: "gateway_logs", method: "DELETE", base: "api", path: (f) => `${gw(f)}/${f.gateway}/logs`, body: "none" },
  {
    family: "gateway_logs",
    method: "PATCH",
    base: "api",
    path: (f) => `${gw(f)}/${f.gateway}/logs/01J0000000000000000000000`,
    body: "json",
    sample: () => ({ feedback: 1 }),
  },
  read("gateway_logs", (f) => `${gw(f)}/${f.gateway}/logs/01J0000000000000000000000`),
  read("gateway_logs", (f) => `${gw(f)}/${f.gateway}/logs/01J0000000000000000000000/request`),
  read("gateway_logs", (f) => `${gw(f)}/${f.gateway}/logs/01J0000000000000000000000/response`),

  {
    family: "gateway_traffic",
    method: "POST",
    base: "edge",
    path: (f) => `/v1/${f.id}/${f.gateway}/openai/chat/completions`,
    body: "opaque",
    sample: () => chat,
  },
  {
    family: "gateway_traffic",
    method: "POST",
    base: "edge",
    path: (f) => `/v1/${f.id}/${f.gateway}`,
    body: "json",
    sample: () => [{ provider: "openai", endpoint: "chat/completions", headers: {}, query: chat }],
  },
  {
    family: "gateway_traffic",
    method: "POST",
    base: "edge",
    path: (f) => `/v1/${f.id}/${f.gateway}/compat/chat/completions`,
    body: "json",
    sample: () => ({ ...chat, model: "openai/gpt-4o-mini" }),
  },

  {
    family: "worker_traffic",
    method: "GET",
    base: "edge",
    path: () => "/echo",
    body: "none",
    host: (f) => (f.script ? `${f.script}.workers.localhost` : undefined),
  },
];

export const FAMILIES: readonly Family[] = [...new Set(ENDPOINTS.map((e) => e.family))];

/** A worker that answers with the URL it was given, so a test can see what reached the script. */
export const ECHO_WORKER = `export default { fetch(req) { return new Response(new URL(req.url).pathname + new URL(req.url).search); } };`;

/** A well-formed multipart body for a multipart endpoint (the fuzzer mutates it; the suite breaks it). */
export async function multipartOf(e: Endpoint): Promise<{ contentType: string; body: Buffer }> {
  const form = new FormData();
  if (e.family === "workers") {
    form.append("metadata", JSON.stringify({ main_module: "index.js", compatibility_date: "2024-09-01" }));
    form.append("index.js", new Blob([ECHO_WORKER], { type: "application/javascript+module" }), "index.js");
  } else if (e.family === "dns_records") {
    form.append("file", new Blob(["fuzz 300 IN A 198.51.100.9\n"]), "zone.txt");
  } else {
    form.append("value", "fuzz value");
    form.append("metadata", JSON.stringify({ a: 1 }));
  }
  const encoded = new Response(form);
  return { contentType: encoded.headers.get("content-type")!, body: Buffer.from(await encoded.arrayBuffer()) };
}

interface Call {
  status: number;
  body: any;
}

async function call(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<Call> {
  const isBuffer = Buffer.isBuffer(body);
  const res = await request(url, {
    method: method as "GET",
    headers: { ...(body !== undefined && !isBuffer ? { "content-type": "application/json" } : {}), ...headers },
    body: body === undefined ? undefined : isBuffer ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  try {
    return { status: res.statusCode, body: JSON.parse(text) };
  } catch {
    return { status: res.statusCode, body: text };
  }
}

/**
 * Makes two accounts with the same resources in each (the second created with the global key), and a token per
 * account that holds every permission on that account only. The first account also gets a deployed echo worker.
 */
export async function setUpAccounts(p: TestPlatform): Promise<[AccountFixture, AccountFixture]> {
  const globalKey = { "x-auth-email": p.email, "x-auth-key": p.apiKey };
  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = globalKey) => {
    const r = await call(p.apiUrl + path, method, headers, body);
    if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.result;
  };
  const second = await api("POST", "/accounts", { name: `second-${randomBytes(3).toString("hex")}` });
  const permissions = [
    "dns_edit",
    "kv_edit",
    "r2_edit",
    "d1_edit",
    "queues_edit",
    "workers_edit",
    "ai_gateway_edit",
    "ai_gateway_run",
    "account_settings_read",
    "api_tokens_edit",
  ];
  const fixtures: AccountFixture[] = [];
  for (const id of [p.accountId, second.id as string]) {
    const token = (await api("POST", "/user/tokens", { name: `all-on-${id.slice(0, 6)}`, permissions, account_id: id })).value as string;
    const suffix = randomBytes(4).toString("hex");
    const zoneName = `z${suffix}.example`;
    const zone = (await api("POST", "/zones", { name: zoneName, account: { id } })).id as string;
    const record = (await api("POST", `/zones/${zone}/dns_records`, { type: "A", name: `www.${zoneName}`, content: "198.51.100.1", ttl: 300 })).id as string;
    const namespace = (await api("POST", `/accounts/${id}/storage/kv/namespaces`, { title: `ns-${suffix}` })).id as string;
    const bucket = `b-${suffix}`;
    await api("POST", `/accounts/${id}/r2/buckets`, { name: bucket });
    const gateway = `gw-${suffix}`;
    await api("POST", `/accounts/${id}/ai-gateway/gateways`, {
      id: gateway,
      cache_ttl: 0,
      cache_invalidate_on_update: false,
      collect_logs: true,
      rate_limiting_interval: 0,
      rate_limiting_limit: 0,
    });
    const secondaryZone = (await api("POST", "/zones", { name: `s${suffix}.example`, account: { id }, type: "secondary" })).id as string;
    const transfers = `/accounts/${id}/secondary_dns`;
    const tsig = (await api("POST", `${transfers}/tsigs`, { name: `k${suffix}.`, algo: "hmac-sha256.", secret: randomBytes(32).toString("base64") }))
      .id as string;
    const peer = (await api("POST", `${transfers}/peers`, { name: `p${suffix}`, ip: "127.0.0.1", port: 9 })).id as string;
    const spareToken = (await api("POST", `/accounts/${id}/tokens`, { name: `spare-${suffix}`, permissions: ["kv_read"] })).id as string;
    const queue = (await api("POST", `/accounts/${id}/queues`, { queue_name: `q-${suffix}` })).queue_id as string;
    const consumer = (await api("POST", `/accounts/${id}/queues/${queue}/consumers`, { type: "http_pull" })).consumer_id as string;
    const database = (await api("POST", `/accounts/${id}/d1/database`, { name: `db-${suffix}` })).uuid as string;
    fixtures.push({ id, token, zone, zoneName, record, namespace, bucket, gateway, secondaryZone, tsig, peer, spareToken, queue, consumer, database });
  }
  const script = "echo";
  const upload = await multipartOf(ENDPOINTS.find((e) => e.family === "workers" && e.body === "multipart")!);
  const r = await call(
    `${p.apiUrl}/accounts/${fixtures[0].id}/workers/scripts/${script}`,
    "PUT",
    { ...globalKey, "content-type": upload.contentType },
    upload.body,
  );
  if (r.status !== 200) throw new Error(`deploy ${script}: ${r.status} ${JSON.stringify(r.body)}`);
  fixtures[0].script = script;
  return [fixtures[0], fixtures[1]];
}

/** The URL of an endpoint for an account, with an optional suffix on the path and a query. */
export function urlOf(p: TestPlatform, e: Endpoint, f: AccountFixture, query = ""): string {
  return `${e.base === "api" ? p.apiUrl : p.url}${e.path(f)}${query}`;
}

/**
 * The route a request for `path` (its query ignored) reaches among `routes`, picked as Fastify's router does: at each
 * segment a static match wins over a parameter, and a parameter over a wildcard (which takes the rest, at least one
 * character). Undefined when none matches.
 */
export function routeOf<R extends { method: string; url: string }>(routes: readonly R[], method: string, path: string): R | undefined {
  const segments = path.split("?")[0].split("/");
  /** Per segment: 0 static, 1 parameter, 2 wildcard; undefined when the route does not match. */
  const rank = (url: string): number[] | undefined => {
    const parts = url.split("/");
    const out: number[] = [];
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (part === "*") return i < segments.length && segments.slice(i).join("/") !== "" ? [...out, 2] : undefined;
      if (i >= segments.length) return undefined;
      if (part.startsWith(":")) {
        if (segments[i] === "") return undefined;
        out.push(1);
      } else if (part === segments[i]) out.push(0);
      else return undefined;
    }
    return parts.length === segments.length ? out : undefined;
  };
  let best: { route: R; rank: number[] } | undefined;
  for (const route of routes) {
    if (route.method !== method) continue;
    const r = rank(route.url);
    if (!r) continue;
    const first = best && r.findIndex((x, i) => x !== best!.rank[i]);
    if (!best || (first! >= 0 && r[first!] < (best.rank[first!] ?? 3))) best = { route, rank: r };
  }
  return best?.route;
}
