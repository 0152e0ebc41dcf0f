import type { IncomingHttpHeaders } from "node:http";
import { parseDictionary } from "structured-headers";

/** The hosted header that sends a request to one version of a Worker's current (gradual) deployment. */
export const VERSION_OVERRIDES_HEADER = "cloudflare-workers-version-overrides";

/**
 * Longest header parsed; a longer one is ignored like one that does not parse. Parsing costs a few hundred
 * nanoseconds a character (an inner list filling a 32 KiB head took 25-50 ms of the event loop), and any client may
 * send one to a Worker in a gradual deployment; 2 KiB holds about twenty `name="version id"` entries.
 */
const MAX_HEADER_CHARS = 2048;

/**
 * The version the request's `Cloudflare-Workers-Version-Overrides` header names for script `name`, if any. The header is
 * an RFC 8941 Dictionary of Worker name to version id (a String), e.g. `my-worker="dc8dcd28-…"`; as hosted, a header
 * that does not parse, or an entry that is not a String, is ignored (the request is routed by the shares); so is one
 * over MAX_HEADER_CHARS (ours).
 */
export function versionOverride(headers: IncomingHttpHeaders | undefined, name: string): string | undefined {
  const value = headers?.[VERSION_OVERRIDES_HEADER];
  if (value === undefined) return undefined;
  // Node joins repeated fields of an unknown header with ", ", which is how a Dictionary is continued (RFC 8941 §3.2).
  const text = Array.isArray(value) ? value.join(", ") : value;
  if (text.length > MAX_HEADER_CHARS) return undefined;
  if (text !== last.text) last = { text, versions: versionsOf(text) };
  return last.versions.get(name);
}

/**
 * The last header parsed and what it named: a client smoke-testing a version sends the same header on every request,
 * and parsing one takes tens of microseconds (measured in docs/workers.md), several times a JSON.parse of its size.
 */
let last = { text: "", versions: new Map<string, string>() };

/** Worker name -> version id of a header value: the entries whose value is a String; none when it does not parse. */
function versionsOf(text: string): Map<string, string> {
  const versions = new Map<string, string>();
  try {
    for (const [key, [item]] of parseDictionary(text)) if (typeof item === "string") versions.set(key, item);
  } catch {
    // Ignored, as hosted: the request goes by the shares.
  }
  return versions;
}
