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

/**
 * The upstream URL for a client path (no leading slash, query excluded) and query string.
 * Returns a message instead when the path lacks segments the provider needs (Azure's resource/deployment).
 */
export function upstreamUrl(p: ProviderAdapter, accountId: string, path: string, search: string): URL | string {
  const segs = path.split("/");
  // Dot segments would let a path climb out of the provider's base (e.g. out of Workers AI's account path).
  if (segs.some((s) => s === ".." || s === "." || /^(%2e|\.){1,2}$/i.test(s))) return "paths may not contain . or .. segments";
  const vars: Record<string, string> = { account_id: accountId };
  for (const name of p.pathParams ?? []) {
    const v = segs.shift();
    if (!v) return `${p.id} paths start with ${(p.pathParams ?? []).map((n) => `{${n}}`).join("/")}`;
    vars[name] = v;
  }
  let rest = segs.join("/");
  if (p.stripLeadingV1 && rest.startsWith("v1/")) rest = rest.slice(3);
  if (p.defaultPrefix && !(p.keepPrefixes ?? []).some((k) => rest.startsWith(k))) rest = p.defaultPrefix + rest;
  const base = p.baseUrl.replace(/\{(\w+)\}/g, (_m, k: string) => encodeURIComponent(vars[k] ?? ""));
  return new URL(`${base}/${rest}${search}`);
}
