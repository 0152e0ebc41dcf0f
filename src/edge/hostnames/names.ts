/**
 * Host names as the plan compares them: lower case, without a port or the root's trailing dot. `[::1]:8787` is
 * `::1`; an IPv6 address without brackets is left whole.
 */
export function normalizeHostname(host: string | undefined): string {
  if (host === undefined) return "";
  // Every request's Host comes here (twice on the proxy's path): the few names a node serves are worked out once.
  let known = normalized.get(host);
  if (known === undefined) {
    known = normalize(host);
    if (host.length <= MEMO_HOST_LENGTH) {
      if (normalized.size >= MEMO_HOSTS) normalized.clear();
      normalized.set(host, known);
    }
  }
  return known;
}

/** The memo of normalizeHostname: at most this many names, each at most this long (a DNS name is 253). */
const MEMO_HOSTS = 1024;
const MEMO_HOST_LENGTH = 300;
const normalized = new Map<string, string>();

function normalize(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end < 0 ? h : h.slice(1, end);
  }
  // One colon: name:port. More than one: an IPv6 address (not valid in Host without brackets, kept as it is).
  const colon = h.indexOf(":");
  if (colon >= 0 && colon === h.lastIndexOf(":")) h = h.slice(0, colon);
  return h.replace(/\.+$/, "");
}

/** Whether `name` is `zone` or a name under it. */
export const atOrUnder = (name: string, zone: string) => zone !== "" && (name === zone || name.endsWith(`.${zone}`));
