import { validateHeaderName, validateHeaderValue } from "node:http";
import { z } from "zod";
import { CoreErrors, EdgeError } from "../../core/errors.js";
import { parseUserJson } from "../../core/http/json-input.js";
import { parseWith } from "../../core/http/validate.js";
import { AigCodes, AigErrors } from "../errors.js";
import type { ProviderKeyring } from "../keys/keyring.js";
import { upstreamUrl, type ProviderRegistry } from "../providers/registry.js";
import type { ProviderAdapter } from "../providers/types.js";
import { clientGone, retryPolicy, type Exchange } from "./exchange.js";
import { Relay, type LogSink } from "./relay.js";
import { readBody } from "./request-body.js";
import { isGatewayHeader } from "./request-options.js";
import { useStoredKey } from "./stored-key.js";
import { forwardHeaders, isHopHeader, type RetryPolicy, type Upstreams } from "./upstream.js";

/** What forwarding a request needs (the universal and compat endpoints, and the provider paths of the proxy). */
export interface ForwardDeps extends LogSink {
  providers: ProviderRegistry;
  upstreams: Upstreams;
  /** The gateways' stored provider keys, for requests that carry none of their own. */
  keys: ProviderKeyring;
  /** Largest request body read whole, in bytes. */
  bodyLimit: number;
}

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
function compatTarget(ex: Exchange, d: ForwardDeps, endpoint: string, query: unknown): Target {
  if (endpoint.replace(/^\/+/, "") !== "chat/completions") throw AigErrors.compatEndpoint();
  const body = query as { model?: unknown } | null;
  const model = typeof body?.model === "string" ? body.model : "";
  const slash = model.indexOf("/");
  if (slash <= 0) throw AigErrors.compatModel();
  const p = d.providers.get(model.slice(0, slash));
  if (!p) throw AigErrors.compatUnknownProvider(model.slice(0, slash));
  if (!p.chatPath) throw AigErrors.compatNoChat(p.id);
  const url = upstreamUrl(p, ex.gateway.account_id, p.chatPath, "") as URL;
  return { provider: p, url, path: p.chatPath, body: Buffer.from(JSON.stringify({ ...body, model: model.slice(slash + 1) })) };
}

function providerTarget(ex: Exchange, d: ForwardDeps, provider: string, endpoint: string, query: unknown): Target {
  if (provider === "compat") return compatTarget(ex, d, endpoint, query);
  const p = d.providers.get(provider);
  if (!p) throw AigErrors.stepUnknownProvider(provider);
  const path = endpoint.replace(/^\/+/, "");
  const url = upstreamUrl(p, ex.gateway.account_id, path, "");
  if (typeof url === "string") throw AigErrors.stepEndpoint(url);
  return { provider: p, url, path, body: Buffer.from(JSON.stringify(query ?? {})) };
}

function parseJson(buf: Buffer): unknown {
  try {
    return parseUserJson(buf);
  } catch (e) {
    throw CoreErrors.malformedJson((e as Error).message);
  }
}

/**
 * A step's own headers as they are sent: names lower-cased, and those meant for the gateway or for one hop dropped,
 * as they are from the client's headers. A name or value HTTP cannot carry is the client's mistake, a 400 (undici
 * would refuse to send it, which would read as an unreachable provider).
 */
function stepHeaders(headers: Record<string, string>): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    try {
      validateHeaderName(name);
    } catch {
      throw AigErrors.stepHeaderName(name);
    }
    try {
      validateHeaderValue(name, value);
    } catch {
      throw AigErrors.stepHeaderValue(name);
    }
    const lower = name.toLowerCase();
    if (!isGatewayHeader(lower) && !isHopHeader(lower)) out.push([lower, value]);
  }
  return out;
}

/** The headers of a JSON request to provider `p`: the client's, the step's `extra`, and a stored key when it carries none. */
async function jsonHeaders(
  ex: Exchange,
  d: ForwardDeps,
  p: ProviderAdapter,
  extra: readonly [string, string][],
  length: number,
): Promise<Record<string, string | string[]>> {
  const h = forwardHeaders(ex.req.headers, isGatewayHeader);
  for (const [name, value] of extra) h[name] = value;
  h["content-type"] = "application/json";
  h["content-length"] = String(length);
  await useStoredKey(ex, p, h, d.keys);
  return h;
}

/** POST /v1/{account}/{gateway}: steps tried in order; the next runs when one fails or times out. */
export async function handleUniversal(ex: Exchange, d: ForwardDeps): Promise<void> {
  const steps = parseWith(universalBody, parseJson(await readBody(ex.req, d.bodyLimit)), AigCodes.validation);
  // Every step's headers are checked before the first step is sent.
  const headersOfStep = steps.map((s) => stepHeaders(s.headers));
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
      const headers = await jsonHeaders(ex, d, t.provider, headersOfStep[i], t.body.length);
      if (await d.upstreams.send({ url: t.url, method: "POST", headers, body: t.body, retry, signal }, relay)) return;
    } catch (err) {
      if (!(err instanceof EdgeError) || last) throw err;
      lastError = err;
    }
  }
  throw lastError ?? AigErrors.noStepServed();
}

/** POST /v1/{account}/{gateway}/compat/chat/completions with `model: "<provider>/<model>"`. */
export async function handleCompat(ex: Exchange, endpoint: string, d: ForwardDeps): Promise<void> {
  if (ex.req.method !== "POST") throw AigErrors.compatMethod();
  const t = compatTarget(ex, d, endpoint, parseJson(await readBody(ex.req, d.bodyLimit)));
  const relay = new Relay(
    ex,
    { provider: t.provider.id, path: t.path, requestType: "compat", step: null, requestBody: () => t.body, requestSize: () => t.body.length, extraHeaders: {} },
    d,
  );
  await d.upstreams.send(
    {
      url: t.url,
      method: "POST",
      headers: await jsonHeaders(ex, d, t.provider, [], t.body.length),
      body: t.body,
      retry: retryPolicy(ex),
      signal: clientGone(ex),
    },
    relay,
  );
}
