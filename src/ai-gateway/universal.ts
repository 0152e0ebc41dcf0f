import { z } from "zod";
import { EdgeError } from "../core/errors.js";
import { parseWith } from "../core/http/validate.js";
import { AigCodes } from "./codes.js";
import { clientGone, retryPolicy, type Exchange } from "./exchange.js";
import { readBody } from "./request-body.js";
import type { ProviderAdapter } from "./providers/types.js";
import { upstreamUrl } from "./providers/registry.js";
import type { ProxyDeps } from "./proxy.js";
import { Relay } from "./relay.js";
import { isGatewayHeader } from "./request-options.js";
import { forwardHeaders, type RetryPolicy } from "./upstream.js";
import { parseUserJson } from "../core/http/json-input.js";

const stepSchema = z.object({
  provider: z.string().min(1),
  endpoint: z.string().default(""),
  headers: z.record(z.string(), z.string()).default({}),
  query: z.unknown(),
  config: z
    .object({
      requestTimeout: z.number().int().positive().optional(),
      maxAttempts: z.number().int().min(1).max(5).optional(),
      retryDelay: z.number().int().min(0).max(5000).optional(),
      backoff: z.enum(["constant", "linear", "exponential"]).optional(),
    })
    .optional(),
});
const universalBody = z.union([z.array(stepSchema).min(1), stepSchema.transform((s) => [s])]);

interface Target {
  provider: ProviderAdapter;
  url: URL;
  path: string;
  body: Buffer;
}

/**
 * The compat endpoint's mapping: `model: "<provider>/<model>"` selects the provider, whose OpenAI-compatible
 * chat path gets the same body with the bare model name.
 */
function compatTarget(ex: Exchange, d: ProxyDeps, endpoint: string, query: unknown): Target {
  if (endpoint.replace(/^\/+/, "") !== "chat/completions") throw new EdgeError(404, AigCodes.badPath, "The compat endpoint serves chat/completions");
  const body = query as { model?: unknown } | null;
  const model = typeof body?.model === "string" ? body.model : "";
  const slash = model.indexOf("/");
  if (slash <= 0) throw new EdgeError(400, AigCodes.validation, 'model: must be "<provider>/<model>", e.g. "openai/gpt-4o-mini"', { pointer: "/model" });
  const p = d.providers.get(model.slice(0, slash));
  if (!p) throw new EdgeError(400, AigCodes.validation, `model: unknown provider "${model.slice(0, slash)}"`, { pointer: "/model" });
  if (!p.chatPath)
    throw new EdgeError(400, AigCodes.validation, `model: ${p.id} has no OpenAI-compatible chat endpoint; call it under /${p.id}/ instead`, {
      pointer: "/model",
    });
  const url = upstreamUrl(p, ex.gateway.account_id, p.chatPath, "") as URL;
  return { provider: p, url, path: p.chatPath, body: Buffer.from(JSON.stringify({ ...body, model: model.slice(slash + 1) })) };
}

function providerTarget(ex: Exchange, d: ProxyDeps, provider: string, endpoint: string, query: unknown): Target {
  if (provider === "compat") return compatTarget(ex, d, endpoint, query);
  const p = d.providers.get(provider);
  if (!p) throw new EdgeError(400, AigCodes.validation, `provider: unknown provider "${provider}"`);
  const path = endpoint.replace(/^\/+/, "");
  const url = upstreamUrl(p, ex.gateway.account_id, path, "");
  if (typeof url === "string") throw new EdgeError(400, AigCodes.validation, `endpoint: ${url}`);
  return { provider: p, url, path, body: Buffer.from(JSON.stringify(query ?? {})) };
}

function parseJson(buf: Buffer): unknown {
  try {
    return parseUserJson(buf);
  } catch (e) {
    throw new EdgeError(400, 6007, `Malformed JSON in request body: ${(e as Error).message}`);
  }
}

function jsonHeaders(ex: Exchange, extra: Record<string, string>, length: number): Record<string, string | string[]> {
  const h = forwardHeaders(ex.req.headers, isGatewayHeader);
  for (const [k, v] of Object.entries(extra)) if (!isGatewayHeader(k.toLowerCase())) h[k.toLowerCase()] = v;
  h["content-type"] = "application/json";
  h["content-length"] = String(length);
  return h;
}

/** POST /v1/{account}/{gateway}: steps tried in order; the next runs when one fails or times out. */
export async function handleUniversal(ex: Exchange, d: ProxyDeps): Promise<void> {
  const steps = parseWith(universalBody, parseJson(await readBody(ex.req, d.bodyLimit)), AigCodes.validation);
  const base = retryPolicy(ex);
  const signal = clientGone(ex);
  let lastError: EdgeError | undefined;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i];
    const t = providerTarget(ex, d, s.provider, s.endpoint, s.query);
    const retry: RetryPolicy = {
      attempts: s.config?.maxAttempts ?? base.attempts,
      delayMs: s.config?.retryDelay ?? base.delayMs,
      backoff: s.config?.backoff ?? base.backoff,
      timeoutMs: s.config?.requestTimeout ?? base.timeoutMs,
    };
    const last = i === steps.length - 1;
    // A failed answer of any step but the last is declined, and the next step is tried.
    const relay = new Relay(
      ex,
      {
        provider: t.provider.id,
        path: t.path,
        requestType: "universal",
        step: i,
        requestBody: () => t.body,
        requestSize: () => t.body.length,
        extraHeaders: { "gw-aig-step": String(i) },
      },
      d,
      !last,
    );
    try {
      if (await d.upstreams.send({ url: t.url, method: "POST", headers: jsonHeaders(ex, s.headers, t.body.length), body: t.body, retry, signal }, relay))
        return;
    } catch (err) {
      if (!(err instanceof EdgeError) || last) throw err;
      lastError = err;
    }
  }
  throw lastError ?? new EdgeError(502, AigCodes.upstreamUnreachable, "No step of the request could be served");
}

/** POST /v1/{account}/{gateway}/compat/chat/completions with `model: "<provider>/<model>"`. */
export async function handleCompat(ex: Exchange, endpoint: string, d: ProxyDeps): Promise<void> {
  if (ex.req.method !== "POST") throw new EdgeError(405, AigCodes.badPath, "The compat endpoint takes POST");
  const t = compatTarget(ex, d, endpoint, parseJson(await readBody(ex.req, d.bodyLimit)));
  const relay = new Relay(
    ex,
    { provider: t.provider.id, path: t.path, requestType: "compat", step: null, requestBody: () => t.body, requestSize: () => t.body.length, extraHeaders: {} },
    d,
  );
  await d.upstreams.send(
    { url: t.url, method: "POST", headers: jsonHeaders(ex, {}, t.body.length), body: t.body, retry: retryPolicy(ex), signal: clientGone(ex) },
    relay,
  );
}
