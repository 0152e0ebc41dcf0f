import { UserError } from "../../core/errors.js";
import { PROVIDERS } from "./catalog.js";
import type { ProviderAdapter } from "./types.js";

/** The provider catalog with the base URLs given at start applied; looked up by path segment. */
export class ProviderRegistry {
  private readonly bySegment = new Map<string, ProviderAdapter>();

  constructor(overrides: readonly string[] = []) {
    const base = new Map<string, string>();
    for (const o of overrides) {
      const eq = o.indexOf("=");
      const name = eq > 0 ? o.slice(0, eq).trim() : "";
      const url = eq > 0 ? o.slice(eq + 1).trim() : "";
      const p = PROVIDERS.find((x) => x.id === name || x.aliases?.includes(name));
      if (!p) throw new UserError(`--provider-base-url ${o}: unknown provider "${name}" (known: ${PROVIDERS.map((x) => x.id).join(", ")})`);
      if (!/^https?:\/\/[^/]/.test(url)) throw new UserError(`--provider-base-url ${o}: expected <provider>=<http(s) URL>`);
      base.set(p.id, url.replace(/\/+$/, ""));
    }
    for (const p of PROVIDERS) {
      const adapter = base.has(p.id) ? { ...p, baseUrl: base.get(p.id)! } : p;
      this.bySegment.set(p.id, adapter);
      for (const a of p.aliases ?? []) this.bySegment.set(a, adapter);
    }
  }

  get(segment: string): ProviderAdapter | undefined {
    return this.bySegment.get(segment);
  }

  ids(): string[] {
    return PROVIDERS.map((p) => p.id);
  }
}

/** A segment that becomes a hostname label (Azure's resource): a DNS label, as the provider's hostnames are. */
const HOST_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;
/** A segment that becomes one path segment (Azure's deployment): what the providers' names are made of. */
const PATH_NAME = /^[A-Za-z0-9_.~-]{1,256}$/;
/**
 * What the rest of a path may hold: printable ASCII but space, `#` (it would end the path), `\` (URL parsers read it
 * as `/`); percent-escapes pass through as they are. The raw request path cannot hold the others, a universal step's
 * `endpoint` (JSON) can.
 */
const PATH_REST = /^[\x21\x22\x24-\x5b\x5d-\x7e]*$/;

/** Whether `{name}` sits in the base URL's host (before the first `/` after the scheme). */
const inHost = (baseUrl: string, name: string) => {
  const at = baseUrl.indexOf(`{${name}}`);
  const pathStart = baseUrl.indexOf("/", baseUrl.indexOf("://") + 3);
  return at >= 0 && (pathStart < 0 || at < pathStart);
};

/**
 * The upstream URL for a client path (no leading slash, query excluded) and query string.
 * Returns a message instead when the path lacks segments the provider needs (Azure's resource/deployment), or when
 * a segment cannot be where the provider puts it (a resource that is no DNS label, a space, a `#`, a control byte):
 * every segment is checked before a URL is built, so the caller answers 400, never a parser's exception.
 */
export function upstreamUrl(p: ProviderAdapter, accountId: string, path: string, search: string): URL | string {
  const segs = path.split("/");
  // Dot segments would let a path climb out of the provider's base (e.g. out of Workers AI's account path).
  if (segs.some((s) => s === ".." || s === "." || /^(%2e|\.){1,2}$/i.test(s))) return "paths may not contain . or .. segments";
  const vars = new Map<string, string>([["account_id", accountId]]);
  for (const name of p.pathParams ?? []) {
    const v = segs.shift();
    if (!v) return `${p.id} paths start with ${(p.pathParams ?? []).map((n) => `{${n}}`).join("/")}`;
    if (inHost(p.baseUrl, name) ? !HOST_LABEL.test(v) : !PATH_NAME.test(v))
      return inHost(p.baseUrl, name)
        ? `the ${p.id} ${name} must be a DNS label (letters, digits and "-", at most 63 characters)`
        : `the ${p.id} ${name} may hold only letters, digits, "-", "_", "." and "~"`;
    vars.set(name, v);
  }
  let rest = segs.join("/");
  if (!PATH_REST.test(rest)) return 'paths may not contain spaces, "#", "\\" or control characters';
  if (!/^(\?[\x21-\x7e]*)?$/.test(search)) return "the query string may not contain spaces or control characters";
  if (p.stripLeadingV1 && rest.startsWith("v1/")) rest = rest.slice(3);
  if (p.defaultPrefix && !(p.keepPrefixes ?? []).some((k) => rest.startsWith(k))) rest = p.defaultPrefix + rest;
  const base = p.baseUrl.replace(/\{(\w+)\}/g, (_m, k: string) => encodeURIComponent(vars.get(k) ?? ""));
  try {
    return new URL(`${base}/${rest}${search}`);
  } catch {
    // Not reached with the checks above; kept so that a provider added later answers 400, not 500.
    return `the path does not make a ${p.id} URL`;
  }
}
