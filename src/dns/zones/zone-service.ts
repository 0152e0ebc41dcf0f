import { EdgeError } from "../../core/errors.js";
import type { PlatformHostnames } from "../../core/service.js";
import { DnsCodes, DnsErrors } from "../errors.js";
import type { DnsRecord, Soa, Zone, ZoneSettings, ZoneType } from "../model.js";
import { ZoneChangedError, type DnsStore } from "../store.js";
import { defaultZoneSettings } from "./soa.js";
import { ZoneServing } from "./serving.js";
import { newId, now, ZoneDraft, ZoneState } from "./zone-state.js";

type ChangeKind = "records" | "settings" | "created" | "deleted";
/** "local": made through this node; "remote": made through another node, and read here from the store. */
export type ChangeOrigin = "local" | "remote";
type ChangeListener = (zone: ZoneState, kind: ChangeKind, origin: ChangeOrigin) => void;
/**
 * Says which records another area keeps for itself (a Worker Custom Domain's record): what manages it, in words for
 * a refusal, or undefined for a record of the account's own.
 */
export type RecordManager = (record: DnsRecord) => string | undefined;

/** A write validated against a zone another node had changed meanwhile is made again this often at most. */
const STALE_ATTEMPTS = 5;

/** Records indexed between two turns of the event loop when a secondary zone's transfer is swapped in. */
const INDEX_PER_TURN = 2000;
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What a zone's id can look like (newId makes 32 hex digits); anything else is no zone, without asking the store. */
const ZONE_ID_SHAPE = /^[0-9A-Za-z_-]{1,64}$/;
/** What a zone's name can look like as stored (lowercase ASCII, IDNs in punycode). */
const ZONE_NAME_SHAPE = /^[0-9a-z_*.-]{1,253}$/;

/** A serial only ever grows: the next one is one more, or the current UNIX time when that is larger. */
const nextSerial = (serial: number) => Math.max(serial + 1, Math.floor(Date.now() / 1000));

/**
 * Every zone in memory (the index the server answers from and the API reads), kept current with the store. Reads
 * are synchronous and never touch the store. Writes run one at a time: each validates against the index, writes
 * the store (one transaction), then updates the index and tells the listeners, so two requests can never both
 * pass a check (a CNAME beside another record, a duplicate zone name) that only one of them may pass, and the
 * change is answered by the time the API call returns.
 */
export class ZoneService {
  private readonly byId = new Map<string, ZoneState>();
  private readonly byName = new Map<string, ZoneState>();
  private readonly listeners: ChangeListener[] = [];
  /** The tail of the queue of writes. */
  private writes: Promise<unknown> = Promise.resolve();
  private loaded?: Promise<void>;
  private managers: RecordManager[] = [];
  private changeCount = 0;
  /** Which zones are answered (a secondary zone is withheld until transferred and past its SOA expire: serving.ts). */
  readonly serving = new ZoneServing();

  /**
   * `maxRecordsPerZone`: the most records a zone may hold (config.ts has the default; none here means no limit).
   * `platformHostnames`: the names no zone or record may take (the edge's hostname plan); none in store tests.
   * `notices`: resolves once every change notice committed before the call is applied here (the bus's barrier).
   */
  constructor(
    private readonly store: DnsStore,
    private readonly limits: { maxRecordsPerZone?: number; platformHostnames?: PlatformHostnames; notices?: () => Promise<void> } = {},
  ) {}

  /** Reads every zone and record from the store, once; later calls wait for the same read. */
  load(): Promise<void> {
    return (this.loaded ??= this.read());
  }

  private async read(): Promise<void> {
    for (const zone of await this.store.listZones()) {
      const zs = new ZoneState(zone);
      for (const r of await this.readRecords(zone.id)) zs.put(r);
      this.index(zs);
    }
  }

  private async readRecords(zoneId: string): Promise<DnsRecord[]> {
    const records: DnsRecord[] = [];
    let after: string | undefined;
    do {
      const page = await this.store.listRecords(zoneId, { after });
      records.push(...page.records);
      after = page.next;
    } while (after !== undefined);
    return records;
  }

  /**
   * Registers an area that keeps records of its own in the zones (workers/routing/dns-records.ts): the records API
   * shows those read-only and refuses to change or delete them, or to add A/AAAA/CNAME records beside them.
   */
  addRecordManager(m: RecordManager): void {
    this.managers.push(m);
  }

  /** What manages a record (RecordManager), or undefined when it is the account's own. */
  managedBy(record: DnsRecord): string | undefined {
    for (const m of this.managers) {
      const by = m(record);
      if (by !== undefined) return by;
    }
    return undefined;
  }

  onChange(l: ChangeListener): void {
    this.listeners.push(l);
  }

  /**
   * Grows with every change of what the zones answer: a zone read, created, changed or deleted, its records changed
   * (here or, reloaded from the store, through another node). Readers keeping answers of their own (the edge's
   * per-host memo) compare it instead of listening.
   */
  get generation(): number {
    return this.changeCount;
  }

  get(id: string): ZoneState | undefined {
    return this.byId.get(id);
  }

  named(name: string): ZoneState | undefined {
    return this.byName.get(name);
  }

  all(): IterableIterator<ZoneState> {
    return this.byId.values();
  }

  /** The zone a name belongs to: the longest zone name it ends with. */
  zoneFor(name: string): ZoneState | undefined {
    let n = name;
    for (;;) {
      const z = this.byName.get(n);
      if (z) return z;
      const dot = n.indexOf(".");
      if (dot < 0) return undefined;
      n = n.slice(dot + 1);
    }
  }

  /** Records at a name as committed, or as the draft has them for the zone being edited; undefined outside our zones. */
  recordsAt(name: string, draft?: ZoneDraft): readonly DnsRecord[] | undefined {
    const zs = this.zoneFor(name);
    if (!zs) return undefined;
    if (draft && zs === draft.zone) return draft.at(name);
    return zs.at(name);
  }

  /**
   * Whether a zone `name` of `accountId` would be inside, or hold, a zone of another account. The server answers a
   * name from the longest zone it ends with, so such a zone would answer for names the other account serves (or, held
   * by it, be answered for): the tenant-crossing that nested zones of one account are not.
   */
  private nestsWithOtherAccount(accountId: string, name: string): boolean {
    const parent = this.zoneFor(name);
    if (parent && parent.zone.account_id !== accountId) return true;
    const suffix = `.${name}`;
    for (const [other, zs] of this.byName) if (other.endsWith(suffix) && zs.zone.account_id !== accountId) return true;
    return false;
  }

  /** A secondary zone starts empty, at serial 0, and is served once its first transfer is in (transfers/secondary.ts). */
  async createZone(accountId: string, name: string, type: ZoneType = "full", opts: { paused?: boolean } = {}): Promise<ZoneState> {
    return this.exclusive(async () => {
      if (this.byName.has(name)) throw DnsErrors.zoneExists(name);
      this.limits.platformHostnames?.refuse("zone", name);
      if (this.nestsWithOtherAccount(accountId, name)) throw DnsErrors.zoneNestsInOtherAccount(name);
      const defaults = await this.store.accountSettings(accountId);
      const t = now();
      const zone: Zone = {
        id: newId(),
        account_id: accountId,
        name,
        paused: opts.paused ?? false,
        created_on: t,
        modified_on: t,
        activated_on: t,
        serial: type === "secondary" ? 0 : nextSerial(0),
        settings: structuredClone(defaults ?? defaultZoneSettings()),
        ...(type === "secondary" ? { type } : {}),
      };
      // A secondary zone serves its primary's records as they are: no CNAME flattening from the account's defaults.
      if (type === "secondary") zone.settings.flatten_all_cnames = false;
      await this.store.createZone(zone);
      const zs = new ZoneState(zone);
      this.index(zs);
      this.emit(zs, "created");
      return zs;
    });
  }

  async deleteZone(zs: ZoneState): Promise<void> {
    return this.exclusive(async () => {
      this.current(zs);
      const deleted = await this.store.deleteZone(zs.zone.id);
      this.drop(zs, deleted ? "local" : "remote");
      // Deleted through another node before this node heard of it.
      if (!deleted) throw DnsErrors.zoneNotFound();
    });
  }

  /** Changes the zone itself (paused, DNS settings); `patch` gets the zone as it is when the write's turn comes. */
  async updateZone(zs: ZoneState, patch: (zone: Zone) => { paused?: boolean; settings?: ZoneSettings }): Promise<Zone> {
    return this.exclusive(() =>
      this.againIfStale(zs, async () => {
        this.current(zs);
        const zone: Zone = { ...zs.zone, ...patch(zs.zone), modified_on: now(), serial: nextSerial(zs.zone.serial) };
        await this.store.updateZone(zone, {}, { ifSerial: zs.zone.serial });
        zs.zone = zone;
        this.emit(zs, "settings");
        return zone;
      }),
    );
  }

  /**
   * Refuses, before anything is written, a change that would leave the zone with more records than allowed and adds
   * any (`added`: records added less records removed). The store checks again as it writes (WriteCondition.maxRecords),
   * against its own count, which is what holds when another node wrote the zone meanwhile.
   */
  private checkQuota(zs: ZoneState, added: number): void {
    const max = this.limits.maxRecordsPerZone;
    if (max !== undefined && added > 0 && zs.records.size + added > max) throw DnsErrors.recordQuota(max);
  }

  /**
   * Changes a zone's records: `change` makes them on a draft (validating each against the zone as changed so far;
   * any error abandons them all), then they are committed together: store first, then the index, then listeners.
   * `change` may take several turns of the event loop (a zone file import validates in parts); the zone's other
   * writes wait for it, reads and answers do not.
   */
  async editRecords<T>(zs: ZoneState, change: (draft: ZoneDraft) => T | Promise<T>): Promise<T> {
    return this.exclusive(() =>
      this.againIfStale(zs, async () => {
        this.current(zs);
        if (zs.zone.type === "secondary") throw DnsErrors.secondaryReadOnly();
        const draft = new ZoneDraft(zs);
        const result = await change(draft);
        // Deleted by another request while `change` took its turns.
        this.current(zs);
        if (draft.changes.size === 0) return result;
        const upserts: DnsRecord[] = [];
        const deletes: string[] = [];
        let added = 0;
        for (const [id, r] of draft.changes) {
          // Every way a record is written (create, update, batch, import) ends here: none at a platform hostname.
          if (r) this.limits.platformHostnames?.refuse("DNS record", r.name);
          if (r) upserts.push(r);
          else deletes.push(id);
          if (zs.records.has(id) !== !!r) added += r ? 1 : -1;
        }
        this.checkQuota(zs, added);
        const zone: Zone = { ...zs.zone, modified_on: now(), serial: nextSerial(zs.zone.serial) };
        await this.store.updateZone(zone, { upserts, deletes }, { ifSerial: zs.zone.serial, maxRecords: this.limits.maxRecordsPerZone });
        await this.apply(zs, zone, { upserts, deletes });
        return result;
      }),
    );
  }

  /**
   * Makes a secondary zone what its primary sent (transfers/secondary.ts): the primary's SOA and serial, and the
   * record changes that turn the zone's records into the primary's, in one store transaction. Records, not the API,
   * are the primary's business, so nothing here is validated beyond the zone being a secondary one.
   */
  async replaceSecondary(zs: ZoneState, primary: { serial: number; soa: Soa }, changes: { upserts: DnsRecord[]; deletes: string[] }): Promise<void> {
    return this.exclusive(async () => {
      this.current(zs);
      if (zs.zone.type !== "secondary") throw new Error(`zone ${zs.zone.name} is not a secondary zone`);
      const zone: Zone = { ...zs.zone, modified_on: now(), serial: primary.serial, settings: { ...zs.zone.settings, soa: primary.soa } };
      // A tenant's primary is as bound by the record limit as the API: a transfer past it is refused whole, and the
      // zone keeps answering its previous version. A large transfer is written (sqlite-store.ts) and indexed (apply)
      // a bounded amount per turn of the event loop.
      const removed = changes.deletes.reduce((n, id) => n + (zs.records.has(id) ? 1 : 0), 0);
      const fresh = changes.upserts.reduce((n, r) => n + (zs.records.has(r.id) ? 0 : 1), 0);
      this.checkQuota(zs, fresh - removed);
      await this.store.updateZone(zone, changes, { maxRecords: this.limits.maxRecordsPerZone });
      await this.apply(zs, zone, changes);
    });
  }

  /**
   * Puts a change just written to the store into the index, then tells the listeners. A large one (a secondary zone's
   * transfer, a zone file import) is built on the side a bounded amount per turn of the event loop: the zone answers
   * its previous version throughout, and the new one from the moment it is swapped in whole.
   */
  private async apply(zs: ZoneState, zone: Zone, changes: { upserts: readonly DnsRecord[]; deletes: readonly string[] }): Promise<void> {
    if (changes.deletes.length + changes.upserts.length <= INDEX_PER_TURN) {
      zs.zone = zone;
      for (const id of changes.deletes) zs.remove(id);
      for (const r of changes.upserts) zs.put(r);
      this.emit(zs, "records");
      return;
    }
    const built = new ZoneState(zone);
    const deleted = new Set(changes.deletes);
    let n = 0;
    for (const r of zs.records.values()) {
      if (++n % INDEX_PER_TURN === 0) await turn();
      if (!deleted.has(r.id)) built.put(r);
    }
    for (const r of changes.upserts) {
      if (++n % INDEX_PER_TURN === 0) await turn();
      built.put(r);
    }
    zs.adopt(built);
    this.emit(zs, "records");
  }

  /** The account's defaults for new zones (the platform's until set). */
  async accountSettings(accountId: string): Promise<ZoneSettings> {
    return (await this.store.accountSettings(accountId)) ?? defaultZoneSettings();
  }

  /** Changes the account's defaults for new zones; `patch` gets them as they are when the write's turn comes. */
  async updateAccountSettings(accountId: string, patch: (settings: ZoneSettings) => ZoneSettings): Promise<ZoneSettings> {
    return this.exclusive(async () => {
      const settings = patch(await this.accountSettings(accountId));
      await this.store.putAccountSettings(accountId, settings);
      return settings;
    });
  }

  /**
   * Reads zone `id` again from the store, after another node changed it (zone-sync.ts): created, changed or
   * deleted here as it is there. Queued with the writes, so it never interleaves with one.
   */
  reloadZone(id: string): Promise<void> {
    return this.exclusive(async () => {
      const zone = await this.store.getZone(id);
      if (zone) await this.refresh(zone);
      else {
        const zs = this.byId.get(id);
        if (zs) this.drop(zs, "remote");
      }
    });
  }

  /**
   * Resolves once the zones here hold every change committed before the call, through any node: the changes other
   * nodes made arrive as bus notices (90–360 ms measured, docs/dns.md), and an API read waits for those already
   * sent (Bus.barrier: one marker notice through PostgreSQL, shared by the requests that wait at once; at once on
   * one node). So a client behind a load balancer reads its own writes whichever node answers. Bounded: while
   * notices cannot arrive it answers from what it has, and catchUp still finds zones this node never heard of.
   */
  async upToDate(): Promise<void> {
    await this.load();
    await this.limits.notices?.();
  }

  /**
   * Zone `id`, read from the store when this node does not know it yet: one made through another node whose notice
   * did not arrive (the bus was down, or upToDate gave up waiting). A client that made it there and names it here
   * at once (Terraform or wrangler behind a load balancer) must not get "not found". An id known here costs
   * nothing; an unknown one, one read of the store (the API's callers are authenticated).
   */
  async catchUp(id: string): Promise<ZoneState | undefined> {
    await this.load();
    // Only what could be a zone's id reaches the store (PostgreSQL refuses a NUL in text with an error, not a miss).
    if (!this.byId.has(id) && ZONE_ID_SHAPE.test(id) && (await this.store.getZone(id))) await this.reloadZone(id);
    return this.byId.get(id);
  }

  /** As catchUp, for the zones named any of `names` (a zone name, or a hostname's suffixes): one read for all. */
  async catchUpNamed(names: readonly string[]): Promise<void> {
    await this.load();
    const unknown = names.filter((n) => !this.byName.has(n) && ZONE_NAME_SHAPE.test(n));
    if (unknown.length === 0) return;
    for (const id of await this.store.zoneIdsNamed(unknown)) if (!this.byId.has(id)) await this.reloadZone(id);
  }

  /** Reads again every zone whose serial in the store differs from the one here (after notices may have been lost). */
  reloadAll(): Promise<void> {
    return this.exclusive(async () => {
      const stored = await this.store.listZones();
      const ids = new Set(stored.map((z) => z.id));
      for (const zs of [...this.byId.values()]) if (!ids.has(zs.zone.id)) this.drop(zs, "remote");
      for (const zone of stored) await this.refresh(zone);
    });
  }

  /**
   * Makes the zone here what the store has, given its row as just read. Every write changes the serial, so an equal
   * serial means the same content. The row is read before the records: a write committed in between leaves a serial
   * older than the records, which the write's own notice (or the next write's stale check) then corrects; the other
   * order could pair old records with a new serial and never notice.
   */
  private async refresh(zone: Zone): Promise<void> {
    const zs = this.byId.get(zone.id);
    if (zs?.zone.serial === zone.serial) return;
    const records = await this.readRecords(zone.id);
    // Names are unique in the store: a zone here with this name but another id was deleted there.
    const namesake = this.byName.get(zone.name);
    if (namesake && namesake !== zs) this.drop(namesake, "remote");
    if (zs) {
      // In place: requests holding this zone keep working on it.
      for (const id of [...zs.records.keys()]) zs.remove(id);
      zs.zone = zone;
      for (const r of records) zs.put(r);
      this.emit(zs, "records", "remote");
    } else {
      const created = new ZoneState(zone);
      for (const r of records) created.put(r);
      this.index(created);
      this.emit(created, "created", "remote");
    }
  }

  /** Runs a write validated against `zs`; when another node changed the zone since, reloads it and runs it again. */
  private async againIfStale<T>(zs: ZoneState, write: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await write();
      } catch (err) {
        // Deleted through another node: gone here too.
        if (err instanceof EdgeError && err.errors[0]?.code === DnsCodes.invalidZone && this.byId.get(zs.zone.id) === zs) this.drop(zs, "remote");
        if (!(err instanceof ZoneChangedError)) throw err;
        if (attempt === STALE_ATTEMPTS) throw DnsErrors.zoneBusy();
        const zone = await this.store.getZone(zs.zone.id);
        if (!zone) {
          this.drop(zs, "remote");
          throw DnsErrors.zoneNotFound();
        }
        await this.refresh(zone);
      }
    }
  }

  private drop(zs: ZoneState, origin: ChangeOrigin): void {
    this.byId.delete(zs.zone.id);
    if (this.byName.get(zs.zone.name) === zs) this.byName.delete(zs.zone.name);
    this.serving.forget(zs.zone.id);
    this.emit(zs, "deleted", origin);
  }

  /** Runs `work` after every write queued before it; a failed write does not stop the ones after it. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.writes.then(work);
    this.writes = run.catch(() => undefined);
    return run;
  }

  /** A zone deleted while a write waited for its turn is gone for that write too. */
  private current(zs: ZoneState): void {
    if (this.byId.get(zs.zone.id) !== zs) throw DnsErrors.zoneNotFound();
  }

  private index(zs: ZoneState): void {
    this.changeCount++;
    this.byId.set(zs.zone.id, zs);
    this.byName.set(zs.zone.name, zs);
  }

  private emit(zs: ZoneState, kind: ChangeKind, origin: ChangeOrigin = "local"): void {
    this.changeCount++;
    for (const l of this.listeners) l(zs, kind, origin);
  }
}
