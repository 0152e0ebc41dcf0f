import { effectiveTtl } from "../model.js";
import type { ZoneState } from "../zones/zone-state.js";
import { DnssecErrors } from "./errors.js";
import { ALGORITHM, DNSKEY_TTL, generateKey, newKeyId, signingKey, type KeyRole, type SigningKey } from "./keys.js";
import type { ZoneSigner } from "./online.js";
import { RrsetSigner } from "./signer.js";
import type { DnssecStore, StoredKey, ZoneDnssec } from "./store.js";

/** What the answer engine needs of a signed zone: the DNSKEY set to publish, and the keys that sign now. */
export interface ZoneSigning {
  /** Every published key (signing, pre-published or retired), as DNSKEY data for dns-packet. */
  dnskeys: { flags: number; algorithm: number; key: Buffer }[];
  /** Active key-signing keys: they sign the DNSKEY set. */
  ksks: SigningKey[];
  /** Active zone-signing keys: they sign every other RRset. */
  zsks: SigningKey[];
}

/** Where a rollover stands and when its next step becomes safe. */
export interface RolloverProgress {
  key: KeyRole;
  /** zsk: "publish" (new key published, old one signs), "retire" (new key signs, old one still published). ksk: "ds-change". */
  stage: "publish" | "retire" | "ds-change";
  next_step: string;
  next_step_after: string;
}

export interface DnssecOptions {
  /** Seconds every rollover step waits instead of the TTLs (labs and tests); undefined: the TTLs, the safe waits. */
  rolloverWaitSeconds?: number;
  /**
   * Several nodes share the zones (--database-url) but not the keys, which stay in each node's SQLite: a node
   * without them would answer a signed zone unsigned, and validators would call the zone bogus. Enabling is refused.
   */
  distributed?: boolean;
}

const now = () => new Date().toISOString();
const after = (since: string, seconds: number) => new Date(Date.parse(since) + seconds * 1000).toISOString();

/**
 * DNSSEC state of every zone in memory (read once from the store, then written store first, one change at a time)
 * and the operations on it: enable, disable, delete, key rollovers. `onChange` runs after every change that alters
 * what is answered, so the server can empty its answer caches.
 */
export class DnssecService implements ZoneSigner {
  readonly signer = new RrsetSigner();
  private readonly states = new Map<string, ZoneDnssec>();
  private readonly signing = new Map<string, ZoneSigning>();
  private writes: Promise<unknown> = Promise.resolve();
  private loaded?: Promise<void>;

  constructor(
    private readonly store: DnssecStore,
    private readonly opts: DnssecOptions,
    /** `zoneId`: the zone whose signing changed (a secondary must learn of it: a new serial). */
    private readonly onChange: (zoneId?: string) => void,
  ) {}

  load(): Promise<void> {
    return (this.loaded ??= (async () => {
      for (const s of await this.store.list()) this.remember(s);
    })());
  }

  /** The signing keys of a signed zone; undefined when the zone is not signed. */
  signingFor(zoneId: string): ZoneSigning | undefined {
    return this.signing.get(zoneId);
  }

  state(zoneId: string): ZoneDnssec | undefined {
    return this.states.get(zoneId);
  }

  /** Starts signing: with the zone's kept keys when it has them (the DS at the parent stays right), else new ones. */
  enable(zs: ZoneState): Promise<ZoneDnssec> {
    if (this.opts.distributed) return Promise.reject(DnssecErrors.notOnSeveralNodes());
    return this.change(zs, (cur) => {
      if (cur?.status === "active") return cur;
      const t = now();
      const keys = cur?.keys.length ? cur.keys : [newKey("ksk", "active", t), newKey("zsk", "active", t)];
      return { zone_id: zs.zone.id, status: "active", enabled_on: t, modified_on: t, keys };
    });
  }

  /** Stops signing; the keys are kept, so enabling again serves the same DNSKEY and DS. */
  disable(zs: ZoneState): Promise<ZoneDnssec | undefined> {
    return this.change(zs, (cur) => (cur && cur.status !== "disabled" ? { ...cur, status: "disabled", enabled_on: null, modified_on: now() } : cur));
  }

  /** Stops signing and forgets the keys (the next enable makes new ones, with a new DS). */
  async remove(zoneId: string): Promise<void> {
    await this.exclusive(async () => {
      if (!this.states.has(zoneId)) return;
      await this.store.delete(zoneId);
      this.forget(zoneId);
      this.onChange(zoneId);
    });
  }

  /** The next step of a `role` key rollover (starting one when none is in progress), refused before it is safe. */
  rollover(zs: ZoneState, role: KeyRole): Promise<ZoneDnssec> {
    return this.change(zs, (cur) => {
      if (!cur || cur.status !== "active") throw DnssecErrors.notSigned();
      const progress = this.progress(zs, cur);
      if (progress && progress.key !== role) throw DnssecErrors.rolloverBusy(progress.key);
      const t = now();
      const keys = cur.keys;
      const mine = (state: StoredKey["state"]) => keys.filter((k) => k.role === role && k.state === state);
      if (!progress) {
        // ZSK: pre-publication (RFC 6781 §4.1.1.1), the new key published before it signs. KSK: double signature
        // (§4.1.2), the new key signs the DNSKEY set beside the old one until the parent's DS has changed.
        return { ...cur, modified_on: t, keys: [...keys, newKey(role, role === "zsk" ? "published" : "active", t)] };
      }
      if (Date.now() < Date.parse(progress.next_step_after))
        throw DnssecErrors.rolloverTooEarly(progress.next_step, progress.next_step_after, this.why(progress));
      if (progress.stage === "publish") {
        const [next] = mine("published");
        const retiring = new Set(mine("active").map((k) => k.id));
        return {
          ...cur,
          modified_on: t,
          keys: keys.map((k) =>
            k.id === next.id ? { ...k, state: "active", state_since: t } : retiring.has(k.id) ? { ...k, state: "retired", state_since: t } : k,
          ),
        };
      }
      if (progress.stage === "retire") return { ...cur, modified_on: t, keys: keys.filter((k) => !(k.role === "zsk" && k.state === "retired")) };
      // ds-change: keep the newest KSK only.
      const newest = mine("active").at(-1)!;
      return { ...cur, modified_on: t, keys: keys.filter((k) => k.role !== "ksk" || k.id === newest.id) };
    });
  }

  /** The rollover in progress, if any, and when its next step is safe. */
  progress(zs: ZoneState, s: ZoneDnssec): RolloverProgress | undefined {
    const wait = (ttl: number) => this.opts.rolloverWaitSeconds ?? ttl;
    const published = s.keys.find((k) => k.role === "zsk" && k.state === "published");
    if (published) return { key: "zsk", stage: "publish", next_step: "make the new ZSK sign", next_step_after: after(published.state_since, wait(DNSKEY_TTL)) };
    const retired = s.keys.find((k) => k.role === "zsk" && k.state === "retired");
    if (retired) return { key: "zsk", stage: "retire", next_step: "remove the old ZSK", next_step_after: after(retired.state_since, wait(maxTtl(zs))) };
    const ksks = s.keys.filter((k) => k.role === "ksk" && k.state === "active");
    if (ksks.length > 1)
      return { key: "ksk", stage: "ds-change", next_step: "remove the old KSK", next_step_after: after(ksks.at(-1)!.state_since, wait(DNSKEY_TTL)) };
    return undefined;
  }

  private why(p: RolloverProgress): string {
    if (p.stage === "publish") return "resolvers may still hold the DNSKEY set without the new key for its TTL";
    if (p.stage === "retire") return "answers signed with the old key may still be cached for the zone's largest TTL";
    return "the new KSK must be known to resolvers, and the parent must serve only the new DS (check it with dig DS) for the DS TTL";
  }

  /** Applies `next` to the zone's state when its write's turn comes; store first, then memory, then onChange. */
  private change<T extends ZoneDnssec | undefined>(zs: ZoneState, next: (cur: ZoneDnssec | undefined) => T): Promise<T> {
    return this.exclusive(async () => {
      const cur = this.states.get(zs.zone.id);
      const updated = next(cur);
      if (updated === cur || !updated) return updated;
      await this.store.put(updated);
      this.remember(updated);
      this.onChange(zs.zone.id);
      return updated;
    });
  }

  private remember(s: ZoneDnssec): void {
    this.states.set(s.zone_id, s);
    if (s.status !== "active") {
      this.signing.delete(s.zone_id);
      return;
    }
    const keys = s.keys.map((k) => ({ stored: k, key: signingKey(k.role, k) }));
    this.signing.set(s.zone_id, {
      dnskeys: keys.map(({ key }) => ({ flags: key.flags, algorithm: ALGORITHM, key: key.publicKey })),
      ksks: keys.filter((k) => k.stored.role === "ksk" && k.stored.state === "active").map((k) => k.key),
      zsks: keys.filter((k) => k.stored.role === "zsk" && k.stored.state === "active").map((k) => k.key),
    });
  }

  private forget(zoneId: string): void {
    this.states.delete(zoneId);
    this.signing.delete(zoneId);
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.writes.then(work);
    this.writes = run.catch(() => undefined);
    return run;
  }
}

function newKey(role: KeyRole, state: StoredKey["state"], t: string): StoredKey {
  return { id: newKeyId(), role, state, ...generateKey(role), created_on: t, state_since: t };
}

/** The longest any answer of the zone may be cached: its largest TTL, negative answers and the DNSKEY set included. */
export function maxTtl(zs: ZoneState): number {
  const s = zs.zone.settings;
  let max = Math.max(DNSKEY_TTL, s.ns_ttl, s.soa.ttl, Math.min(s.soa.ttl, s.soa.min_ttl));
  for (const r of zs.records.values()) max = Math.max(max, effectiveTtl(r));
  return max;
}
