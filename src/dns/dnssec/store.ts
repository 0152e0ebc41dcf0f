import type { KeyMaterial, KeyRole } from "./keys.js";

/**
 * Where a key stands: `active` keys sign (and are published), `published` keys are in the DNSKEY set before they
 * sign (a new ZSK during a rollover, so resolvers know it before its first signature), `retired` keys are still
 * published after they stopped signing (so signatures made with them and still cached keep validating).
 */
export type KeyState = "active" | "published" | "retired";

export interface StoredKey extends KeyMaterial {
  id: string;
  role: KeyRole;
  state: KeyState;
  created_on: string;
  /** When the key entered its current state (the rollover waits count from here). */
  state_since: string;
}

/** A zone's DNSSEC: whether it is signed, since when, and its keys (kept when disabled, so re-enabling keeps the DS). */
export interface ZoneDnssec {
  zone_id: string;
  status: "active" | "disabled";
  /** When signing last started; null while disabled. */
  enabled_on: string | null;
  modified_on: string;
  keys: StoredKey[];
}

/**
 * Durable DNSSEC state, one record per zone with its keys. Private keys are handed over and returned in clear; an
 * implementation keeps them sealed with the platform's secrets key (core/secret-box.ts), never in clear at rest.
 * `sqlite-store.ts` is the SQLite implementation; `store.contract.ts` is what every implementation does.
 */
export interface DnssecStore {
  /** Every zone that has DNSSEC state (signed or with keys kept). */
  list(): Promise<ZoneDnssec[]>;
  get(zoneId: string): Promise<ZoneDnssec | undefined>;
  /** Replaces the zone's state and its whole key set in one transaction. */
  put(state: ZoneDnssec): Promise<void>;
  /** Forgets the zone's state and keys; false when there was none. */
  delete(zoneId: string): Promise<boolean>;
}
