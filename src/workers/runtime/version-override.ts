import type { IncomingHttpHeaders } from "node:http";
import { parseDictionary } from "structured-headers";

/** The hosted header that sends a request to one version of a Worker's current (gradual) deployment. */
export const VERSION_OVERRIDES_HEADER = "cloudflare-workers-version-overrides";

/**
 * The version the request's `Cloudflare-Workers-Version-Overrides` header names for script `name`, if any. The header is
 * an RFC 8941 Dictionary of Worker name to version id (a String), e.g. `my-worker="dc8dcd28-…"`; as hosted, a header
 * that does not parse, or an entry that is not a String, is ignored (the request is routed by the shares).
 */
export function versionOverride(headers: IncomingHttpHeaders | undefined, name: string): string | undefined {
  const value = headers?.[VERSION_OVERRIDES_HEADER];
  if (value === undefined) return undefined;
  try {
    // Node joins repeated fields of an unknown header with ", ", which is how a Dictionary is continued (RFC 8941 §3.2).
    const entry = parseDictionary(Array.isArray(value) ? value.join(", ") : value).get(name);
    const item = entry?.[0];
    return typeof item === "string" ? item : undefined;
  } catch {
    return undefined;
  }
}
