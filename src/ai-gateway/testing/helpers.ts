import { request } from "undici";
import { startTestPlatform, type TestPlatform, type TestPlatformOptions } from "../../core/testing/platform.js";

/** Creates a gateway through the v4 API with the required settings filled in. */
export async function createGateway(p: TestPlatform, id: string, settings: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const r = await p.api("POST", `/accounts/${p.accountId}/ai-gateway/gateways`, {
    id,
    cache_ttl: 0,
    cache_invalidate_on_update: false,
    collect_logs: true,
    rate_limiting_interval: 0,
    rate_limiting_limit: 0,
    ...settings,
  });
  if (r.status !== 200) throw new Error(`create gateway ${id}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.result;
}

export async function updateGateway(p: TestPlatform, id: string, change: Record<string, unknown>): Promise<void> {
  const cur = await p.api("GET", `/accounts/${p.accountId}/ai-gateway/gateways/${id}`);
  const r = await p.api("PUT", `/accounts/${p.accountId}/ai-gateway/gateways/${id}`, { ...cur.body.result, ...change });
  if (r.status !== 200) throw new Error(`update gateway ${id}: ${r.status} ${JSON.stringify(r.body)}`);
}

/** Creates an API token with the given permissions on the platform's account; returns id and value. */
export async function createToken(p: TestPlatform, permissions: string[], name = "gw-test"): Promise<{ id: string; value: string }> {
  const r = await p.api("POST", `/accounts/${p.accountId}/tokens`, { name, permissions });
  if (r.status !== 200) throw new Error(`create token: ${r.status} ${JSON.stringify(r.body)}`);
  return { id: r.body.result.id, value: r.body.result.value };
}

interface GatewayAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** A plain HTTP call to the gateway (no SDK), for the cases the SDK hides. */
export async function callGateway(url: string, opts: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<GatewayAnswer> {
  const res = await request(url, {
    method: (opts.method ?? "POST") as "POST",
    headers: { "content-type": "application/json", ...opts.headers },
    body: opts.body === undefined ? undefined : typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body),
  });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

export const chatBody = (content = "hello", extra: Record<string, unknown> = {}) => ({ model: "gpt-4o-mini", messages: [{ role: "user", content }], ...extra });

/**
 * Starts the real platform with the given providers pointed at local stand-ins (`<provider>=<url>`), and any
 * further serve `args`, on free ports only (the DNS server's default port would clash between test files running together).
 */
export function startGatewayPlatform(providers: string[], opts: TestPlatformOptions = {}): Promise<TestPlatform> {
  return startTestPlatform({ ...opts, args: ["--dns-port", "0", ...providers.flatMap((p) => ["--provider-base-url", p]), ...(opts.args ?? [])] });
}
