import type { Bus } from "../cluster/bus.js";
import { CoreErrors } from "../errors.js";
import type { Logger } from "../logger.js";
import { EMAIL_RE, hashSecret, KEY_RE, newApiToken, newId, secretMatches, TOKEN_RE } from "./credentials.js";
import { IdentityErrors } from "./errors.js";
import { Principal } from "./principal.js";
import type { Account, ApiTokenRecord, IdentityStore } from "./store.js";
import { assertHeldBy, inScopeOf, resolveGrants, type GrantRequest } from "./token-grants.js";

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

/** A value now, or once the store has answered: the cache's hits stay synchronous (no promise per request). */
export type MaybePromise<T> = T | Promise<T>;

export interface VerifiedToken {
  principal: Principal;
  token: ApiTokenRecord;
}

/** An S3 access key: the token it names and the secret SigV4 signs with (the SHA-256 hex of the token's value). */
export interface VerifiedAccessKey extends VerifiedToken {
  secret: string;
}

/** The bus area of identity changes. */
const IDENTITY_AREA = "core";

/** Applies `f` at once to a value in hand, or when a pending one arrives. */
function then<T, R>(v: MaybePromise<T>, f: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return v instanceof Promise ? v.then(f) : f(v);
}

/**
 * Turns credentials into a Principal. What it reads from the store is cached in memory per credential (the AI
 * gateway checks a token on every proxied request), so a known credential is answered synchronously, without a
 * store call or a promise; any change to tokens, keys or memberships through this service clears the cache.
 */
export class AuthService {
  private readonly keys = new Map<string, Principal>();
  /**
   * Verified tokens by their value, in memory only: this spares the hot path a SHA-256 and a store call each time.
   * Cleared with the rest, so a revoked token is refused at once.
   */
  private readonly tokens = new Map<string, VerifiedToken>();
  /** S3 access keys (token ids) already resolved, in memory only; cleared with the rest. */
  private readonly accessKeys = new Map<string, VerifiedAccessKey>();
  private readonly touched = new Map<string, number>();
  /** Bumped by invalidate(): a lookup that started before a change does not put its stale answer in the cache. */
  private generation = 0;

  /**
   * With a bus, a change made through any node's AuthService (a token revoked, rolled, narrowed; a new account)
   * clears every node's cache: other nodes stop honouring a revoked token as soon as the notice arrives, and
   * after a resync (notices possibly lost) everything is read again.
   */
  constructor(
    private readonly store: IdentityStore,
    private readonly log?: Logger,
    private readonly bus?: Bus,
  ) {
    bus?.subscribe(IDENTITY_AREA, (event) => {
      if (event.type === "resync" || event.origin !== bus.nodeId) this.invalidate();
    });
  }

  /** Clears this node's cache after a change, and tells the other nodes to clear theirs. */
  private async changed(): Promise<void> {
    this.invalidate();
    // The change is committed: if the notice cannot be sent, PostgreSQL is unreachable, and every node that
    // lost its connection resyncs (clears its cache) when it is back.
    await this.bus
      ?.publish(IDENTITY_AREA, "identities")
      .catch((err: unknown) => this.log?.error({ err }, "could not announce an identity change to the other nodes"));
  }

  invalidate(): void {
    this.generation++;
    this.keys.clear();
    this.tokens.clear();
    this.accessKeys.clear();
  }

  /** Authenticates a v4 API request. Throws (or rejects with) the exact v4 errors clients expect. */
  authenticate(h: AuthHeaders): MaybePromise<Principal> {
    const authz = h.authorization;
    const email = h["x-auth-email"];
    const key = h["x-auth-key"];
    if (!authz && !email && !key) throw CoreErrors.missingCredentials();
    const byKey = (): MaybePromise<Principal> => {
      if (!email || !EMAIL_RE.test(email)) throw CoreErrors.invalidEmailHeader();
      if (!key || !KEY_RE.test(key)) throw CoreErrors.invalidKeyHeader();
      return then(this.verifyGlobalKey(email, key), (p) => {
        if (!p) throw CoreErrors.authentication();
        return p;
      });
    };
    // The TS SDK sends the key pair and a bearer token together when both are configured: either may carry the call.
    if (authz) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authz);
      if (!m || !TOKEN_RE.test(m[1])) throw CoreErrors.invalidAuthorizationHeader();
      return then(this.verifyToken(m[1]), (v) => {
        if (v) return v.principal;
        if (!email || !key) throw CoreErrors.authentication();
        return byKey();
      });
    }
    return byKey();
  }

  verifyGlobalKey(email: string, key: string): MaybePromise<Principal | undefined> {
    const cacheKey = `k:${email.toLowerCase()}:${hashSecret(key)}`;
    const hit = this.keys.get(cacheKey);
    if (hit) return hit;
    return this.loadGlobalKey(email, key, cacheKey);
  }

  private async loadGlobalKey(email: string, key: string, cacheKey: string): Promise<Principal | undefined> {
    const generation = this.generation;
    const user = await this.store.findUserByEmail(email);
    const stored = user && (await this.store.globalKeyHash(user.id));
    if (!user || !stored || !secretMatches(key, stored)) return undefined;
    const accounts = await this.memberships(user.id);
    const principal = Principal.forGlobalKey(user.id, user.email, new Set(accounts.keys()), accounts);
    if (generation === this.generation) this.keys.set(cacheKey, principal);
    return principal;
  }

  /** Resolves an API token; undefined when unknown, disabled, expired or not yet valid. Synchronous for a known token. */
  verifyToken(value: string): MaybePromise<VerifiedToken | undefined> {
    const hit = this.tokens.get(value);
    if (hit) return this.usable(hit);
    return this.loadToken(value).then((loaded) => loaded && this.usable(loaded));
  }

  private async loadToken(value: string): Promise<VerifiedToken | undefined> {
    const generation = this.generation;
    const rec = await this.store.findTokenByHash(hashSecret(value));
    if (!rec || !secretMatches(value, rec.token_hash)) return undefined;
    const user = await this.store.getUser(rec.user_id);
    if (!user) return undefined;
    const { token_hash: _h, ...token } = rec;
    const accounts = await this.memberships(user.id);
    const verified = { principal: new Principal("api_token", user.id, user.email, new Set(accounts.keys()), token.grants, token.id, accounts), token };
    if (generation === this.generation) {
      if (this.tokens.size > 10_000) this.tokens.clear();
      this.tokens.set(value, verified);
    }
    return verified;
  }

  /**
   * Resolves an S3 access key id, which is an API token's id (as R2 does it), to the token's principal and its
   * secret access key: the SHA-256 hex of the token's value, which is exactly what the store keeps of it.
   * undefined when unknown, disabled, expired or not yet valid. Synchronous for a known key.
   */
  verifyAccessKey(id: string): MaybePromise<VerifiedAccessKey | undefined> {
    const hit = this.accessKeys.get(id);
    if (hit) return this.usable(hit);
    return this.loadAccessKey(id).then((loaded) => loaded && this.usable(loaded));
  }

  private async loadAccessKey(id: string): Promise<VerifiedAccessKey | undefined> {
    const generation = this.generation;
    const rec = await this.store.findTokenById(id);
    const user = rec && (await this.store.getUser(rec.user_id));
    if (!rec || !user) return undefined;
    const { token_hash: secret, ...token } = rec;
    const accounts = await this.memberships(user.id);
    const verified = { principal: new Principal("api_token", user.id, user.email, new Set(accounts.keys()), token.grants, token.id, accounts), token, secret };
    if (generation === this.generation) {
      if (this.accessKeys.size > 10_000) this.accessKeys.clear();
      this.accessKeys.set(id, verified);
    }
    return verified;
  }

  /** The token as it may be used now: active, in its validity window. */
  private usable<V extends VerifiedToken>(v: V): V | undefined {
    const t = v.token;
    const now = Date.now();
    if (t.status !== "active") return undefined;
    if (t.expires_on && Date.parse(t.expires_on) <= now) return undefined;
    if (t.not_before && Date.parse(t.not_before) > now) return undefined;
    this.noteUse(t.id, now);
    return v;
  }

  /** last_used_on is written at most once a minute per token, so verifying stays a read; the request does not wait for it. */
  private noteUse(id: string, now: number): void {
    const last = this.touched.get(id) ?? 0;
    if (now - last < 60_000) return;
    this.touched.set(id, now);
    this.store.touchToken(id, new Date(now).toISOString()).catch((err: unknown) => this.log?.warn({ err, tokenId: id }, "could not record a token's last use"));
  }

  private async memberships(userId: string): Promise<Map<string, Account>> {
    return new Map((await this.store.listAccountsOfUser(userId)).map((a) => [a.id, a]));
  }

  /** The user behind a principal. */
  async userOf(caller: Principal) {
    const user = await this.store.getUser(caller.userId);
    if (!user) throw CoreErrors.authentication();
    return user;
  }

  /** A new account, with `userId` as its member. */
  async createAccount(userId: string, name: string): Promise<Account> {
    const account = await this.store.createAccount(name);
    await this.store.addMembership(userId, account.id);
    await this.changed();
    return account;
  }

  /** The API token a principal was authenticated with. */
  async currentToken(caller: Principal): Promise<ApiTokenRecord> {
    const t = caller.tokenId === undefined ? undefined : await this.store.getToken(caller.tokenId);
    if (!t) throw IdentityErrors.verifyNeedsToken();
    return t;
  }

  /** The caller's user's tokens that the caller may see and manage (inScopeOf), oldest first. */
  async tokensOf(caller: Principal): Promise<ApiTokenRecord[]> {
    return (await this.store.listTokens(caller.userId)).filter((t) => inScopeOf(caller, t));
  }

  /**
   * Creates an API token. Its grants are resolved against the creator now (`*` becomes the creator's accounts) and
   * must all be held by the creator, so a token with token-edit rights cannot mint a stronger or wider one.
   */
  async createToken(creator: Principal, input: TokenInput): Promise<{ token: ApiTokenRecord; value: string }> {
    const grants = resolveGrants(creator, input.grants);
    const value = newApiToken();
    const token = await this.store.createToken({
      id: newId(),
      user_id: creator.userId,
      name: input.name,
      grants,
      not_before: input.not_before ?? null,
      expires_on: input.expires_on ?? null,
      value,
    });
    await this.changed();
    return { token, value };
  }

  /** A token the caller may see and manage (inScopeOf); anything else is the same 404 as an unknown id. */
  async tokenFor(caller: Principal, id: string): Promise<ApiTokenRecord> {
    const t = await this.store.getToken(id);
    if (!t || !inScopeOf(caller, t)) throw IdentityErrors.tokenNotFound();
    return t;
  }

  /** Replaces a token's name, grants and dates; the new grants obey the same rule as at creation, judged against the caller. */
  async updateToken(caller: Principal, id: string, input: TokenInput & { status?: ApiTokenRecord["status"] }): Promise<ApiTokenRecord> {
    const current = await this.tokenFor(caller, id);
    const updated = await this.store.updateToken(id, {
      name: input.name,
      grants: resolveGrants(caller, input.grants),
      status: input.status ?? current.status,
      not_before: input.not_before === undefined ? current.not_before : input.not_before,
      expires_on: input.expires_on === undefined ? current.expires_on : input.expires_on,
    });
    await this.changed();
    if (!updated) throw IdentityErrors.tokenNotFound();
    return updated;
  }

  /** A new secret for a token the caller holds every grant of (a roll hands out the token's power). */
  async rollToken(caller: Principal, id: string): Promise<string> {
    assertHeldBy(caller, (await this.tokenFor(caller, id)).grants);
    const value = newApiToken();
    const rolled = await this.store.rollToken(id, value);
    await this.changed();
    if (!rolled) throw IdentityErrors.tokenNotFound();
    return value;
  }

  /** Revokes a token in the caller's scope; it is refused at once (the caches are cleared). */
  async deleteToken(caller: Principal, id: string): Promise<ApiTokenRecord> {
    const t = await this.tokenFor(caller, id);
    const done = await this.store.deleteToken(id);
    await this.changed();
    if (!done) throw IdentityErrors.tokenNotFound();
    return t;
  }
}
