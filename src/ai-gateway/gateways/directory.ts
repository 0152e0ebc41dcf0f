import { AigErrors } from "../errors.js";
import type { Gateway, GatewayStore } from "./store.js";
import type { GatewaySettings } from "./schema.js";

/** Settings of the gateway that the hosted gateway creates on first authenticated use of the id "default". */
export const DEFAULT_GATEWAY: GatewaySettings = {
  cache_ttl: 0,
  cache_invalidate_on_update: false,
  collect_logs: true,
  rate_limiting_interval: 0,
  rate_limiting_limit: 0,
  rate_limiting_technique: "fixed",
  authentication: true,
  log_management: null,
  log_management_strategy: null,
  retry_max_attempts: null,
  retry_delay: null,
  retry_backoff: null,
};

/** Most gateways (and known absences) kept in memory before the cache starts over. */
const MAX_CACHED = 10_000;

/**
 * The gateways, as the proxy and the API see them: the store behind an in-memory copy of what it answered, so the
 * proxy reads a gateway's settings on every request without waiting (`cached`). Every change goes through here,
 * updates that copy and calls `onChange` (which resets what other parts keep per gateway); a change made through
 * another node arrives as a bus notice (`changedElsewhere`, wired in service.ts).
 */
export class GatewayDirectory {
  /** By "<account>/<id>"; null records a gateway that does not exist. */
  private readonly cache = new Map<string, Gateway | null>();
  /** Moves on every change, so a read that overlapped one does not cache what it read before it. */
  private generation = 0;

  constructor(
    private readonly store: GatewayStore,
    private readonly onChange: (accountId: string, gatewayId: string, dropCachedAnswers: boolean) => void,
  ) {}

  /** What is known without asking the store: the gateway, null when it is known not to exist, undefined when not known. */
  cached(accountId: string, id: string): Gateway | null | undefined {
    return this.cache.get(`${accountId}/${id}`);
  }

  async get(accountId: string, id: string): Promise<Gateway | undefined> {
    const known = this.cached(accountId, id);
    if (known !== undefined) return known ?? undefined;
    const generation = this.generation;
    const g = await this.store.get(accountId, id);
    if (generation === this.generation) this.remember(accountId, id, g ?? null);
    return g;
  }

  list(accountId: string, search: string, limit: number, offset: number): Promise<{ items: Gateway[]; total: number }> {
    return this.store.list(accountId, search, limit, offset);
  }

  create(accountId: string, id: string, settings: GatewaySettings): Promise<Gateway> {
    return this.write(accountId, id, () => this.store.create(accountId, id, settings));
  }

  /** The account's "default" gateway, made on first use (by a request with a token that may run it). */
  async createDefault(accountId: string): Promise<Gateway> {
    try {
      return await this.create(accountId, "default", { ...DEFAULT_GATEWAY });
    } catch (err) {
      // Two first requests at once: the other one made it.
      const made = await this.get(accountId, "default");
      if (made) return made;
      throw err;
    }
  }

  async update(accountId: string, id: string, settings: GatewaySettings): Promise<Gateway> {
    const g = await this.write(accountId, id, () => this.store.update(accountId, id, settings));
    if (!g) throw AigErrors.gatewayNotFound(id);
    this.onChange(accountId, id, g.cache_invalidate_on_update);
    return g;
  }

  /** Deletes the gateway and its logs; returns what it was. */
  async delete(accountId: string, id: string): Promise<Gateway> {
    const g = await this.write(accountId, id, () => this.store.delete(accountId, id));
    if (!g) throw AigErrors.gatewayNotFound(id);
    this.onChange(accountId, id, true);
    return g;
  }

  /**
   * Another node changed (created, replaced or deleted) the gateway: its next read asks the store, a read that
   * overlapped the notice is not cached, and what other parts keep of it goes (`onChange`).
   */
  changedElsewhere(accountId: string, id: string, dropCachedAnswers: boolean): void {
    this.generation++;
    this.cache.delete(`${accountId}/${id}`);
    this.onChange(accountId, id, dropCachedAnswers);
  }

  /** Notices may have been lost: every gateway is read again from the store. */
  forgetAll(): void {
    this.generation++;
    this.cache.clear();
  }

  /** Runs a change of one gateway; the next read of it asks the store, and reads that overlapped it are not cached. */
  private async write<T>(accountId: string, id: string, change: () => Promise<T>): Promise<T> {
    this.generation++;
    try {
      return await change();
    } finally {
      this.generation++;
      this.cache.delete(`${accountId}/${id}`);
    }
  }

  private remember(accountId: string, id: string, g: Gateway | null): void {
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(`${accountId}/${id}`, g);
  }
}
