import { randomBytes } from "node:crypto";
import { request } from "undici";
import type { TestPlatform } from "./platform.js";

/**
 * The platform's HTTP surface as data: every endpoint family, the resources each needs in an account, and what
 * kind of body each endpoint reads. The hostile-input suite (core/http/hostile-input.test.ts) and the longer fuzzer
 * (scripts/fuzz-api.mjs) both walk this list, so a new endpoint added here is attacked by both.
 */

export type Family = "identity" | "zones" | "dns_records" | "kv" | "r2" | "workers" | "ai_gateway" | "gateway_logs" | "gateway_traffic" | "worker_traffic";

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
  /** A deployed worker (in the first account only: each costs a workerd process). */
  script?: string;
}

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
}

const acct = (f: AccountFixture) => `/accounts/${f.id}`;
const kv = (f: AccountFixture) => `${acct(f)}/storage/kv/namespaces`;
const gw = (f: AccountFixture) => `${acct(f)}/ai-gateway/gateways`;
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
  { family: "dns_records", method: "GET", base: "api", path: (f) => `/zones/${f.zone}/dnssec`, body: "none" },
  { family: "dns_records", method: "PATCH", base: "api", path: (f) => `/zones/${f.zone}/dnssec`, body: "json", sample: () => ({ status: "disabled" }) },

  { family: "kv", method: "GET", base: "api", path: kv, body: "none", paginated: { maxPerPage: 1000 } },
  { family: "kv", method: "POST", base: "api", path: kv, body: "json", sample: () => ({ title: "fuzz" }) },
  { family: "kv", method: "PUT", base: "api", path: (f) => `${kv(f)}/${f.namespace}`, body: "json", sample: () => ({ title: "renamed" }) },
  { family: "kv", method: "GET", base: "api", path: (f) => `${kv(f)}/${f.namespace}/keys`, body: "none" },
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

  { family: "ai_gateway", method: "GET", base: "api", path: gw, body: "none", paginated: { maxPerPage: 100 } },
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
  const permissions = ["dns_edit", "kv_edit", "r2_edit", "workers_edit", "ai_gateway_edit", "ai_gateway_run", "account_settings_read", "api_tokens_edit"];
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
    fixtures.push({ id, token, zone, zoneName, record, namespace, bucket, gateway });
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
