import type { SecureVersion } from "node:tls";
import type { Bus } from "../../core/cluster/bus.js";
import type { Logger } from "../../core/logger.js";
import { DEVELOPMENT_MODE_MS, parseSetting, SETTINGS, settingSpec, type SettingValue, type SslMode } from "./definitions.js";
import { SETTINGS_AREA } from "./pg-store.js";
import { ChangesDuringLoad } from "../../core/cluster/changes-during-load.js";
import { QueueByKey } from "../../core/cluster/queue-by-key.js";
import type { StoredSetting, ZoneSettingsStore } from "./store.js";

/** min_tls_version's values as Node names the versions. */
const TLS_VERSIONS: ReadonlyMap<SettingValue, SecureVersion> = new Map([
  ["1.0", "TLSv1"],
  ["1.1", "TLSv1.1"],
  ["1.2", "TLSv1.2"],
  ["1.3", "TLSv1.3"],
]);

/** A setting as the API answers it (hosted shape). */
export interface SettingView {
  id: string;
  value: SettingValue;
  editable: boolean;
  modified_on: string | null;
  /** development_mode only: seconds until it turns itself off. */
  time_remaining?: number;
}

/** What changed: `ids` the settings whose value changed (empty when not known), `local` when through this node's API. */
export interface SettingsChange {
  ids: readonly string[];
  local: boolean;
}

/**
 * Every zone's settings in memory (the proxy reads them on every request, without waiting on the store); writes go
 * to the store first. On several nodes a change's bus notice (`zone:<id>`) makes every node read that zone again, and
 * a resync reads them all.
 */
export class ZoneSettings {
  private byZone = new Map<string, Map<string, StoredSetting>>();
  private unsubscribe?: () => void;
  private readonly listeners: ((zoneId: string | undefined, change: SettingsChange) => void | Promise<void>)[] = [];

  constructor(
    private readonly store: ZoneSettingsStore,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async load(): Promise<void> {
    this.byZone = await this.loading.load(
      async () => {
        const next = new Map<string, Map<string, StoredSetting>>();
        for (const s of await this.store.all()) this.zoneMap(next, s.zoneId).set(s.id, s);
        return next;
      },
      () => this.byZone,
    );
    void this.changed(undefined, { ids: [], local: false });
  }

  /**
   * Calls `listener` after a zone's settings changed, here or (read again) from another node: with its id, or
   * undefined when every zone was read again. Other areas that act on a setting (DNS: `ipv6`) forget what they
   * derived from it; `change.local` says it was made through this node (DNS gives the zone a new serial then, once
   * for the cluster), with the settings whose value it changed.
   */
  onChange(listener: (zoneId: string | undefined, change: SettingsChange) => void | Promise<void>): void {
    this.listeners.push(listener);
  }

  /** Tells every listener; resolves once what they started is done (their failures are logged, never thrown). */
  private changed(zoneId: string | undefined, change: SettingsChange): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const l of this.listeners) {
      try {
        const done = l(zoneId, change);
        if (done) pending.push(done.catch((err: unknown) => this.log.error({ err, zoneId }, "a zone settings listener failed")));
      } catch (err) {
        this.log.error({ err, zoneId }, "a zone settings listener failed");
      }
    }
    return Promise.all(pending).then(() => undefined);
  }

  /** `failed`: told of a reload that failed (an edge thread then starts again: its copy would stay old). */
  follow(bus: Bus, failed?: (err: unknown) => void): void {
    this.unsubscribe = bus.subscribe(SETTINGS_AREA, (event) => {
      // This node's own writes are in memory already (its write path sets them): read again only others'.
      if (event.type === "change" && event.origin === bus.nodeId) return;
      const reload = event.type === "resync" ? this.load() : event.what.startsWith("zone:") ? this.reloadZone(event.what.slice(5)) : Promise.resolve();
      // Returned: the bus's barrier waits for it (API reads of this node then see the other node's change).
      return reload.catch((err: unknown) => {
        this.log.error({ err, event }, "zone settings not reloaded");
        failed?.(err);
      });
    });
  }

  stop(): void {
    this.unsubscribe?.();
  }

  /** Every setting of a zone, in the order of SETTINGS. */
  list(zoneId: string): SettingView[] {
    return [...SETTINGS.keys()].map((id) => this.view(zoneId, id));
  }

  /** One setting (refused with 1006 when the platform has no such setting). */
  get(zoneId: string, id: string): SettingView {
    settingSpec(id);
    return this.view(zoneId, id);
  }

  /** The value the zone obeys now. */
  value(zoneId: string, id: string): SettingValue {
    return this.view(zoneId, id).value;
  }

  /** The SSL mode (read on every proxied request: no view is built). */
  ssl(zoneId: string): SslMode {
    return (this.byZone.get(zoneId)?.get("ssl")?.value ?? SETTINGS.get("ssl")!.default) as SslMode;
  }

  /**
   * The TLS versions the HTTPS port accepts for a zone's names (names in no zone: see below): from `min_tls_version` up to
   * 1.3, or 1.2 where `tls_1_3` is off (a minimum of 1.3 keeps 1.3 whatever `tls_1_3` says: nothing else is left);
   * names in no zone: 1.2 to 1.3.
   */
  tlsVersions(zoneId: string | undefined): { min: SecureVersion; max: SecureVersion } {
    // Names in no zone (the platform's own, a hello without SNI) are no tenant's to loosen: TLS 1.2 and up, as the
    // port took before zones had settings. Zones start at the hosted default (1.0).
    if (zoneId === undefined) return { min: "TLSv1.2", max: "TLSv1.3" };
    const setting = (id: string) => this.raw(zoneId, id);
    const min = TLS_VERSIONS.get(setting("min_tls_version") ?? "1.0") ?? "TLSv1";
    const tls13 = setting("tls_1_3");
    return { min, max: tls13 === "off" && min !== "TLSv1.3" ? "TLSv1.2" : "TLSv1.3" };
  }

  /** The value a zone stored, or the default (read on every cached request: no view is built; not for development_mode). */
  raw(zoneId: string, id: string): SettingValue | undefined {
    return this.byZone.get(zoneId)?.get(id)?.value ?? SETTINGS.get(id)?.default;
  }

  /** Whether an on/off setting is on (read on every proxied request; development_mode goes through its expiry). */
  on(zoneId: string, id: string): boolean {
    if (id === "development_mode") return this.byZone.get(zoneId)?.get(id)?.value === "on" && this.value(zoneId, id) === "on";
    return (this.byZone.get(zoneId)?.get(id)?.value ?? SETTINGS.get(id)?.default) === "on";
  }

  /**
   * Changes settings of one zone: every item is validated first, then all are written in one transaction (a refused
   * item writes nothing). Answers the changed settings.
   */
  async edit(zoneId: string, accountId: string, items: readonly { id: string; value: unknown }[]): Promise<SettingView[]> {
    const at = this.now();
    const rows = items.map((item) => ({ zoneId, accountId, id: item.id, value: parseSetting(item.id, item.value), modifiedOn: at }));
    return this.serially(zoneId, () => this.write(zoneId, rows));
  }

  private async write(zoneId: string, rows: StoredSetting[]): Promise<SettingView[]> {
    await this.store.put(rows);
    this.loading.changed(zoneId);
    const zone = this.zoneMap(this.byZone, zoneId);
    const ids = rows.filter((r) => this.raw(zoneId, r.id) !== r.value).map((r) => r.id);
    for (const r of rows) zone.set(r.id, r);
    // What the change makes others do (DNS: a new serial for `ipv6`) is done before the API answers.
    await this.changed(zoneId, { ids, local: true });
    return rows.map((r) => this.view(zoneId, r.id));
  }

  /** The zone was deleted: its settings go with it (a zone made later starts from the defaults). */
  zoneDeleted(zoneId: string): Promise<void> {
    return this.serially(zoneId, async () => {
      await this.store.deleteZone(zoneId);
      this.loading.changed(zoneId);
      this.byZone.delete(zoneId);
      await this.changed(zoneId, { ids: [], local: true });
    });
  }

  private reloadZone(zoneId: string): Promise<void> {
    return this.serially(zoneId, async () => {
      const rows = await this.store.zone(zoneId);
      this.loading.changed(zoneId);
      if (rows.length === 0) this.byZone.delete(zoneId);
      else this.byZone.set(zoneId, new Map(rows.map((r) => [r.id, r])));
      await this.changed(zoneId, { ids: [], local: false });
    });
  }

  /**
   * The zone's writes and reloads, in turn: a reload that read older settings can then never land after one that
   * read newer (two quick changes through another node), nor after a write of this node.
   */
  private readonly queue = new QueueByKey();
  /** What a whole reload (a resync) must not undo: zones changed here while it read. */
  private readonly loading = new ChangesDuringLoad();

  private serially<T>(zoneId: string, work: () => Promise<T>): Promise<T> {
    return this.queue.run(zoneId, work);
  }

  private view(zoneId: string, id: string): SettingView {
    const stored = this.byZone.get(zoneId)?.get(id);
    const spec = SETTINGS.get(id)!;
    const view: SettingView = {
      id,
      value: stored?.value ?? spec.default,
      editable: true,
      modified_on: stored ? new Date(stored.modifiedOn).toISOString() : null,
    };
    if (id === "development_mode") {
      const remaining = stored && stored.value === "on" ? Math.max(0, stored.modifiedOn + DEVELOPMENT_MODE_MS - this.now()) : 0;
      if (remaining === 0) view.value = "off";
      view.time_remaining = Math.ceil(remaining / 1000);
    }
    return view;
  }

  private zoneMap(maps: Map<string, Map<string, StoredSetting>>, zoneId: string): Map<string, StoredSetting> {
    let m = maps.get(zoneId);
    if (!m) maps.set(zoneId, (m = new Map()));
    return m;
  }
}
