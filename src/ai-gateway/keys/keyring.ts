import { PROVIDERS } from "../providers/catalog.js";
import type { NewProviderKey, OpenedProviderKey, ProviderKey, ProviderKeyStore } from "./store.js";

/** The credential header a stored key goes in, and its value: what the provider's own clients send. */
export interface StoredCredential {
  header: string;
  value: string;
}

/** One provider's stored keys on one gateway: the default one (when a key is marked so) and every key by alias. */
export interface ProviderKeys {
  default: StoredCredential | undefined;
  byAlias: ReadonlyMap<string, StoredCredential>;
}

/** A gateway's stored keys by provider id; null when it has none. */
export type GatewayKeys = ReadonlyMap<string, ProviderKeys> | null;

/** Most gateways whose keys are kept in memory before the cache starts over (as the gateway directory does). */
const MAX_CACHED = 10_000;

/** The first credential header of each provider: `authorization` takes `Bearer <key>`, the others the bare key. */
const CREDENTIAL_HEADER = new Map(PROVIDERS.map((p) => [p.id, p.credentialHeaders[0]]));

function credential(k: OpenedProviderKey): StoredCredential {
  const header = CREDENTIAL_HEADER.get(k.provider_slug) ?? "authorization";
  return { header, value: header === "authorization" ? `Bearer ${k.secret}` : k.secret };
}

function index(keys: readonly OpenedProviderKey[]): GatewayKeys {
  if (keys.length === 0) return null;
  const out = new Map<string, { default: StoredCredential | undefined; byAlias: Map<string, StoredCredential> }>();
  for (const k of keys) {
    let p = out.get(k.provider_slug);
    if (!p) out.set(k.provider_slug, (p = { default: undefined, byAlias: new Map() }));
    const c = credential(k);
    p.byAlias.set(k.alias, c);
    if (k.default_config) p.default = c;
  }
  return out;
}

/**
 * The gateways' stored provider keys, as the proxy reads them: opened once per gateway (on the first request that
 * needs one) and kept in memory, with the header each goes in already built, so a request pays a map lookup and no
 * database read or unsealing. Every change goes through here and drops what is kept of that gateway; a change made
 * through another node arrives as a bus notice (`forget`, wired in service.ts), as a deleted gateway does.
 */
export class ProviderKeyring {
  /** By account, then gateway: two lookups and no key string built per request. */
  private readonly cache = new Map<string, Map<string, GatewayKeys>>();
  private size = 0;
  /** Moves on every change, so a read that overlapped one does not cache what it read before it. */
  private generation = 0;

  constructor(readonly store: ProviderKeyStore) {}

  /** The gateway's keys when known without asking the store (null: it has none), undefined when not known. */
  cached(accountId: string, gatewayId: string): GatewayKeys | undefined {
    return this.cache.get(accountId)?.get(gatewayId);
  }

  async load(accountId: string, gatewayId: string): Promise<GatewayKeys> {
    const generation = this.generation;
    const keys = index(await this.store.opened(accountId, gatewayId));
    if (generation === this.generation) {
      if (this.size >= MAX_CACHED) this.forgetAll();
      let account = this.cache.get(accountId);
      if (!account) this.cache.set(accountId, (account = new Map()));
      if (!account.has(gatewayId)) this.size++;
      account.set(gatewayId, keys);
    }
    return keys;
  }

  create(accountId: string, gatewayId: string, key: NewProviderKey, secret: string, limit: number): Promise<ProviderKey> {
    return this.write(accountId, gatewayId, () => this.store.create(accountId, gatewayId, key, secret, limit));
  }

  replaceSecret(accountId: string, gatewayId: string, id: string, secret: string): Promise<ProviderKey | undefined> {
    return this.write(accountId, gatewayId, () => this.store.replaceSecret(accountId, gatewayId, id, secret));
  }

  delete(accountId: string, gatewayId: string, id: string): Promise<ProviderKey | undefined> {
    return this.write(accountId, gatewayId, () => this.store.delete(accountId, gatewayId, id));
  }

  /** The gateway's keys changed elsewhere (another node, or the gateway was deleted): read them again when needed. */
  forget(accountId: string, gatewayId: string): void {
    this.generation++;
    const account = this.cache.get(accountId);
    if (account?.delete(gatewayId)) this.size--;
  }

  /** Notices may have been lost: every gateway's keys are read again. */
  forgetAll(): void {
    this.generation++;
    this.cache.clear();
    this.size = 0;
  }

  private async write<T>(accountId: string, gatewayId: string, change: () => Promise<T>): Promise<T> {
    this.generation++;
    try {
      return await change();
    } finally {
      this.forget(accountId, gatewayId);
    }
  }
}
