import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** The hosted header that keeps the requests carrying one value on one version of a gradual deployment (version affinity). */
export const VERSION_KEY_HEADER = "cloudflare-workers-version-key";

/**
 * Where the request's `Cloudflare-Workers-Version-Key` falls in the traffic of a gradual deployment: a point in [0, 100)
 * that only the key decides, compared with the versions' shares as a random draw would be. Undefined when the request
 * has no key, or an empty one (it is then routed by the shares).
 *
 * SHA-256 of the key's bytes: the same on every node and after every restart (a process-seeded hash would send one
 * user to different versions on different nodes), and uniform enough that keys spread over the shares. The key's
 * length is bounded by the head limit of the port that took the request (32 KiB at the edge), so hashing it is too.
 */
export function versionKeyPoint(headers: IncomingHttpHeaders | undefined): number | undefined {
  const value = headers?.[VERSION_KEY_HEADER];
  if (value === undefined) return undefined;
  // Node joins repeated fields of an unknown header with ", "; a list (it does not for this one) is joined the same way.
  const key = Array.isArray(value) ? value.join(", ") : value;
  if (key === "") return undefined;
  // Node reads header bytes as latin1: back to latin1 gives the bytes the client sent, whatever their encoding.
  const digest = createHash("sha256").update(key, "latin1").digest();
  // 48 bits of the digest: exact in a double, and finer than any share the API accepts.
  return (digest.readUIntBE(0, 6) / 2 ** 48) * 100;
}
