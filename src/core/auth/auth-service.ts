import { EdgeError, Codes } from "../errors.js";
import { EMAIL_RE, hashSecret, KEY_RE, newApiToken, newId, secretMatches, TOKEN_RE } from "./credentials.js";
import { Principal } from "./principal.js";
import type { ApiTokenRecord, IdentityStore } from "./store.js";
import { assertHeldBy, inScopeOf, resolveGrants, tokenNotFound, type GrantRequest } from "./token-grants.js";

export interface AuthHeaders {
  authorization?: string;
  "x-auth-email"?: string;
  "x-auth-key"?: string;
}

export interface TokenInput {
  name: string;
  grants: GrantRequest[];
  not_before?: string | null;
  expires_on?: string | null;
}

const authError = () => new EdgeError(403, Codes.authentication, "Authentication error");

const headerError = (code: number, message: string) => new EdgeError(400, Codes.invalidHeaders, "Invalid request headers", { chain: [{ code, message }] });

/**
 * Turns credentials into a Principal. Lookups are cached in memory (the AI gateway checks a token on
 * every proxied request); any change to tokens, keys or memberships through this service clears the cache.
 */
export class AuthService {
  private readonly cache = new Map<string, { principal: Principal; token?: ApiTokenRecord }>();
  /**
   * Verified tokens by their value, in memory only: the AI gateway checks one on every proxied request, and this
   * spares it a SHA-256 each time. Cleared with the rest, so a revoked token is refused at once.
   */
  private readonly tokens = new Map<string, { principal: Principal; token?: ApiTokenRecord }>();
  private readonly touched = new Map<string, number>();

  constructor(readonly store: IdentityStore) {}

  invalidate(): void {
    this.cache.clear();
    this.tokens.clear();
  }

  /** Authenticates a v4 API request. Throws the exact v4 errors clients expect. */
  authenticate(h: AuthHeaders): Principal {
    const authz = h.authorization;
    const email = h["x-auth-email"];
    const key = h["x-auth-key"];
    if (!authz && !email && !key) {
      throw new EdgeError(400, Codes.missingAuth, "Missing X-Auth-Key, X-Auth-Email or Authorization headers");
    }
    // The TS SDK sends the key pair and a bearer token together when both are configured: either may carry the call.
    if (authz) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authz);
      if (!m || !TOKEN_RE.test(m[1])) throw headerError(Codes.invalidAuthorizationHeader, "Invalid format for Authorization header");
      const p = this.verifyToken(m[1]);
      if (p) return p.principal;
      if (!email || !key) throw authError();
    }
    if (!email || !EMAIL_RE.test(email)) throw headerError(Codes.invalidEmailHeader, "Invalid format for X-Auth-Email header");
    if (!key || !KEY_RE.test(key)) throw headerError(Codes.invalidKeyHeader, "Invalid format for X-Auth-Key header");
    const p = this.verifyGlobalKey(email, key);
    if (!p) throw authError();
    return p;
  }

  verifyGlobalKey(email: string, key: string): Principal | undefined {
    const cacheKey = `k:${email.toLowerCase()}:${hashSecret(key)}`;
    const hit = this.cache.get(cacheKey);
    if (hit) return hit.principal;
    const user = this.store.findUserByEmail(email);
    const stored = user && this.store.globalKeyHash(user.id);
    if (!user || !stored || !secretMatches(key, stored)) return undefined;
    const principal = Principal.forGlobalKey(user.id, user.email, this.memberships(user.id));
    this.cache.set(cacheKey, { principal });
    return principal;
  }

  /** Resolves an API token; undefined when unknown, disabled, expired or not yet valid. */
  verifyToken(value: string): { principal: Principal; token: ApiTokenRecord } | undefined {
    let hit = this.tokens.get(value);
    if (!hit) {
      const hash = hashSecret(value);
      const rec = this.store.findTokenByHash(hash);
      if (!rec || !secretMatches(value, rec.token_hash)) return undefined;
      const user = this.store.getUser(rec.user_id);
      if (!user) return undefined;
      const { token_hash: _h, ...token } = rec;
      hit = { principal: new Principal("api_token", user.id, user.email, this.memberships(user.id), token.grants, token.id), token };
      if (this.tokens.size > 10_000) this.tokens.clear();
      this.tokens.set(value, hit);
    }
    const t = hit.token!;
    const now = Date.now();
    if (t.status !== "active") return undefined;
    if (t.expires_on && Date.parse(t.expires_on) <= now) return undefined;
    if (t.not_before && Date.parse(t.not_before) > now) return undefined;
    this.noteUse(t.id, now);
    return { principal: hit.principal, token: t };
  }

  /** last_used_on is written at most once a minute per token, so verifying stays a read. */
  private noteUse(id: string, now: number): void {
    const last = this.touched.get(id) ?? 0;
    if (now - last < 60_000) return;
    this.touched.set(id, now);
    this.store.touchToken(id, new Date(now).toISOString());
  }

  private memberships(userId: string): Set<string> {
    return new Set(this.store.listAccountsOfUser(userId).map((a) => a.id));
  }

  /**
   * Creates an API token. Its grants are resolved against the creator now (`*` becomes the creator's accounts) and
   * must all be held by the creator, so a token with token-edit rights cannot mint a stronger or wider one.
   */
  createToken(creator: Principal, input: TokenInput): { token: ApiTokenRecord; value: string } {
    const grants = resolveGrants(creator, input.grants);
    const value = newApiToken();
    const token = this.store.createToken({
      id: newId(),
      user_id: creator.userId,
      name: input.name,
      grants,
      not_before: input.not_before ?? null,
      expires_on: input.expires_on ?? null,
      value,
    });
    this.invalidate();
    return { token, value };
  }

  /** A token the caller may see and manage (inScopeOf); anything else is the same 404 as an unknown id. */
  tokenFor(caller: Principal, id: string): ApiTokenRecord {
    const t = this.store.getToken(id);
    if (!t || !inScopeOf(caller, t)) throw tokenNotFound();
    return t;
  }

  /** Replaces a token's name, grants and dates; the new grants obey the same rule as at creation, judged against the caller. */
  updateToken(caller: Principal, id: string, input: TokenInput & { status?: ApiTokenRecord["status"] }): ApiTokenRecord {
    const current = this.tokenFor(caller, id);
    const updated = this.store.updateToken(id, {
      name: input.name,
      grants: resolveGrants(caller, input.grants),
      status: input.status ?? current.status,
      not_before: input.not_before === undefined ? current.not_before : input.not_before,
      expires_on: input.expires_on === undefined ? current.expires_on : input.expires_on,
    });
    this.invalidate();
    if (!updated) throw tokenNotFound();
    return updated;
  }

  /** A new secret for a token the caller holds every grant of (a roll hands out the token's power). */
  rollToken(caller: Principal, id: string): string {
    assertHeldBy(caller, this.tokenFor(caller, id).grants);
    const value = newApiToken();
    const rolled = this.store.rollToken(id, value);
    this.invalidate();
    if (!rolled) throw tokenNotFound();
    return value;
  }

  /** Revokes a token in the caller's scope; it is refused at once (the caches are cleared). */
  deleteToken(caller: Principal, id: string): ApiTokenRecord {
    const t = this.tokenFor(caller, id);
    const done = this.store.deleteToken(id);
    this.invalidate();
    if (!done) throw tokenNotFound();
    return t;
  }
}
