import { AigErrors } from "../errors.js";
import type { GatewayKeys, ProviderKeyring } from "../keys/keyring.js";
import type { ProviderAdapter } from "../providers/types.js";
import type { Exchange } from "./exchange.js";

type Headers = Record<string, string | string[]>;

/** True when the header carries a credential: an empty value, or `Bearer` with nothing after it, carries none. */
function carriesCredential(v: string | string[] | undefined): boolean {
  if (v === undefined) return false;
  if (typeof v === "string" && v.length > 6 && v.charCodeAt(0) > 32 && v.charCodeAt(v.length - 1) > 32) return true; // the usual key: no string made
  const s = (Array.isArray(v) ? v.join("") : v).trim();
  return s.length > 0 && !(s.length === 6 && s.toLowerCase() === "bearer");
}

/**
 * Puts the gateway's stored key of provider `p` in the headers going upstream, when the request may use it: it
 * carried a valid gateway token of the account (stored keys are never spent on an anonymous caller, even on a gateway
 * with authentication off) and no credential of its own (the request's own key wins, as on the hosted gateway). The
 * key is the one `gw-aig-byok-alias` (or `cf-aig-byok-alias`) names, else the provider's default key; with neither,
 * the request goes on as it came. Returns a promise only when the gateway's keys are not in memory yet.
 */
export function useStoredKey(ex: Exchange, p: ProviderAdapter, headers: Headers, keyring: ProviderKeyring): void | Promise<void> {
  if (!ex.authenticated) return;
  for (const name of p.credentialHeaders) if (carriesCredential(headers[name])) return;
  const g = ex.gateway;
  const keys = keyring.cached(g.account_id, g.id);
  if (keys === undefined) return keyring.load(g.account_id, g.id).then((loaded) => put(ex, p, headers, loaded));
  put(ex, p, headers, keys);
}

function put(ex: Exchange, p: ProviderAdapter, headers: Headers, keys: GatewayKeys): void {
  const h = ex.req.headers;
  const named = h["gw-aig-byok-alias"] ?? h["cf-aig-byok-alias"];
  const alias = Array.isArray(named) ? named[0] : named;
  const mine = keys?.get(p.id);
  const stored = alias ? mine?.byAlias.get(alias) : mine?.default;
  if (!stored) {
    // A key asked for by name that is not there is the caller's mistake, better told than left to the provider's 401.
    if (alias) throw AigErrors.unknownKeyAlias(p.id, alias);
    return;
  }
  headers[stored.header] = stored.value;
}
