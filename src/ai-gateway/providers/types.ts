/**
 * A provider is data only: where its API lives and which headers carry its credential.
 * The gateway passes bodies through unchanged, so no per-provider code is needed on the hot path;
 * usage is read by one extractor that knows every provider's usage shape (../proxy/usage.ts).
 */
export interface ProviderAdapter {
  /** The path segment after the gateway id, e.g. "openai". */
  id: string;
  /** Other segments that mean the same provider. */
  aliases?: readonly string[];
  /**
   * Upstream base URL; the client's path after the provider segment is appended.
   * `{account_id}` is the gateway's account; `{name}` placeholders listed in `pathParams` are taken,
   * in order, from the first segments of the client's path (e.g. Azure's resource and deployment).
   */
  baseUrl: string;
  pathParams?: readonly string[];
  /** Headers that carry the provider credential (part of the cache key; passed through untouched). */
  credentialHeaders: readonly string[];
  /**
   * Some documented client paths repeat the base's trailing `/v1` (e.g. `…/grok/v1/chat/completions`):
   * a leading `v1/` in the client path is dropped so both spellings reach the same upstream path.
   */
  stripLeadingV1?: boolean;
  /** Prefix added to client paths that do not start with one of `keepPrefixes` (Workers AI's `run/`). */
  defaultPrefix?: string;
  keepPrefixes?: readonly string[];
  /** Path of an OpenAI-compatible chat endpoint, for the compat endpoint; absent when the provider has none. */
  chatPath?: string;
}
