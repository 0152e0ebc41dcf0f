/** Token counts and model read from a provider's answer; null where the provider did not say. */
export interface Usage {
  model: string | null;
  tokensIn: number | null;
  tokensOut: number | null;
  cachedTokens: number | null;
  reasoningTokens: number | null;
}

export const emptyUsage = (): Usage => ({ model: null, tokensIn: null, tokensOut: null, cachedTokens: null, reasoningTokens: null });

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
type Obj = Record<string, any>;

/**
 * Merges whatever usage one JSON object (a whole answer or one stream event) carries into `u`.
 * Shapes: OpenAI chat (`usage.prompt_tokens`), OpenAI responses and Anthropic (`usage.input_tokens`,
 * Anthropic streams split it over `message_start` and `message_delta`), Google (`usageMetadata`),
 * Cohere (`usage.billed_units`, or `delta.usage` at a stream's end).
 */
function readUsage(o: unknown, u: Usage): void {
  if (!o || typeof o !== "object") return;
  const obj = o as Obj;
  const inner: Obj | undefined = obj.message ?? obj.response; // Anthropic message_start, OpenAI response.completed
  if (typeof obj.model === "string") u.model = obj.model;
  else if (typeof obj.modelVersion === "string") u.model = obj.modelVersion;
  else if (inner && typeof inner.model === "string") u.model = inner.model;

  const usage: Obj | undefined = obj.usage ?? inner?.usage ?? obj.delta?.usage;
  if (usage && typeof usage === "object") {
    const billed: Obj = usage.billed_units ?? usage.tokens ?? usage;
    const tin = num(billed.prompt_tokens) ?? num(billed.input_tokens);
    const tout = num(billed.completion_tokens) ?? num(billed.output_tokens);
    if (tin !== null) u.tokensIn = tin + (num(usage.cache_read_input_tokens) ?? 0) + (num(usage.cache_creation_input_tokens) ?? 0);
    if (tout !== null) u.tokensOut = tout;
    const cached = num(usage.prompt_tokens_details?.cached_tokens) ?? num(usage.input_tokens_details?.cached_tokens) ?? num(usage.cache_read_input_tokens);
    if (cached !== null) u.cachedTokens = cached;
    const reasoning = num(usage.completion_tokens_details?.reasoning_tokens) ?? num(usage.output_tokens_details?.reasoning_tokens);
    if (reasoning !== null) u.reasoningTokens = reasoning;
  }
  const g: Obj | undefined = obj.usageMetadata;
  if (g && typeof g === "object") {
    u.tokensIn = num(g.promptTokenCount) ?? u.tokensIn;
    u.tokensOut = num(g.candidatesTokenCount) ?? u.tokensOut;
    u.cachedTokens = num(g.cachedContentTokenCount) ?? u.cachedTokens;
    u.reasoningTokens = num(g.thoughtsTokenCount) ?? u.reasoningTokens;
  }
}

/**
 * Reads usage from a server-sent-event stream as its bytes pass, without holding the stream:
 * only the current unfinished line is kept. Each `data:` line that is JSON is read for usage.
 */
export class SseUsageReader {
  readonly usage = emptyUsage();
  private partial = "";
  private readonly decoder = new TextDecoder();

  push(chunk: Uint8Array): void {
    const text = this.partial + this.decoder.decode(chunk, { stream: true });
    let start = 0;
    let nl: number;
    while ((nl = text.indexOf("\n", start)) >= 0) {
      this.line(text.slice(start, nl));
      start = nl + 1;
    }
    // A single line longer than 1 MB is not a usage event; drop it instead of growing without bound.
    this.partial = text.length - start > 1 << 20 ? "" : text.slice(start);
  }

  end(): Usage {
    if (this.partial) this.line(this.partial);
    this.partial = "";
    return this.usage;
  }

  private line(raw: string): void {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (!line.startsWith("data:")) return;
    const data = line.slice(5).trim();
    if (data[0] !== "{") return;
    try {
      readUsage(JSON.parse(data), this.usage);
    } catch {
      /* not JSON: nothing to read */
    }
  }
}

/** Usage of a whole (non-streamed) JSON answer. */
export function usageOfJson(body: Buffer): Usage {
  const u = emptyUsage();
  try {
    readUsage(JSON.parse(body.toString("utf8")), u);
  } catch {
    /* not JSON */
  }
  return u;
}
