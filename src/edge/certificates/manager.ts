import { createSecureContext, type SecureContext } from "node:tls";
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Bus } from "../../core/cluster/bus.js";
import type { Logger } from "../../core/logger.js";
import type { SecretBox } from "../../core/secret-box.js";
import type { CustomDomain } from "../ports.js";
import type { Dns01Answerer, IssuedCertificate } from "./acme.js";
import { CERTIFICATES_AREA } from "./pg-store.js";
import type { CertificateRow, CertificateStore, CustomCertificateRow } from "./store.js";

/** How often due orders and renewals are looked for (and rows other nodes changed are read, besides their notices). */
const CHECK_INTERVAL_MS = 60_000;
/** How long one node holds an order before another may take it over (a node that died while ordering). */
const ORDER_LEASE_MS = 10 * 60_000;
/** A failed order is retried after 1 minute, then 2, 4, … up to 6 hours. */
const FIRST_RETRY_MS = 60_000;
const LONGEST_RETRY_MS = 6 * 3600_000;
/**
 * How long a zone stays proxied before its edge certificate is ordered. Attaching a Custom Domain writes its proxied
 * record before the domain (routing/dns-records.ts), and a node may see the record first: without the wait, that
 * moment reads as a proxied zone and orders a certificate nobody wants. It also spares the CA a toggle undone at once.
 */
const ZONE_CERTIFICATE_WAIT_MS = 10_000;
/** The longest error text kept with a row (a CA's problem detail can be long). */
const MAX_ERROR_CHARS = 500;

/**
 * The kinds of certificates the edge serves (a bounded label of the metrics, metrics.ts): ordered for a Custom
 * Domain, ordered for a zone's edge (`*.<zone>` and its apex), uploaded by an account for its zone.
 */
export type CertificateKind = "custom_domain" | "zone_edge" | "custom_uploaded";
export type OrderedKind = Exclude<CertificateKind, "custom_uploaded">;

/** The kind of an ordered certificate, by its row's hostname (a zone's edge certificate is at `*.<zone>`). */
export const orderedKind = (hostname: string): OrderedKind => (hostname.startsWith("*.") ? "zone_edge" : "custom_domain");

/** One certificate as the metrics see it: its kind, where it stands, and its expiry (ms; null until issued). */
export interface CertificateSummary {
  kind: CertificateKind;
  status: CertificateRow["status"];
  notAfter: number | null;
}

/** What orders one certificate (acme.ts in the platform; the test CA there too). */
export interface CertificateOrderer {
  order(hostname: string, dns: Dns01Answerer): Promise<IssuedCertificate>;
  /** Gives up what is under way (an order then rejects) and resolves once nothing it runs uses a store. */
  close?(): Promise<void>;
}

/** What the domain's API answer shows of its certificate (routing/api.ts). */
export interface CertificateState {
  status: CertificateRow["status"];
  expires_on?: string;
  last_error?: string;
  next_attempt_on?: string;
}

export interface CertificateManagerDeps {
  store: CertificateStore;
  orderer: CertificateOrderer;
  /** The DNS-01 answerer of one order (dns-01.ts). */
  challenges: (hostname: string, accountId: string) => Dns01Answerer;
  box: SecretBox;
  /**
   * Every attached Custom Domain as stored, and every zone with a proxied record as `*.<zone>` (its edge certificate:
   * the apex and the wildcard): whose certificates are kept (rows of others are deleted).
   */
  attached: () => Promise<CustomDomain[]>;
  /** Whether the edge serves this hostname as a Custom Domain now (routing/table.ts): whose certificates are served. */
  served: (hostname: string) => CustomDomain | undefined;
  bus: Bus;
  nodeId: string;
  log: Logger;
  /** The id of the zone the DNS server answers `name` from (lower case, no trailing dot), if any: whose custom certificates may serve it. */
  zoneOf: (name: string) => string | undefined;
}

/** Whether a certificate name (`*.example.com` matches one label) covers `name`. */
export function covers(certName: string, name: string): boolean {
  if (certName === name) return true;
  if (!certName.startsWith("*.")) return false;
  const dot = name.indexOf(".");
  return dot > 0 && name.slice(dot + 1) === certName.slice(2);
}

/** A certificate is renewed once a third of its lifetime is left (30 days of a 90-day one). */
/** Whole milliseconds: the column is an integer (PostgreSQL refuses a fraction for BIGINT). */
export const renewalTime = (issuedAt: number, notAfter: number) => Math.floor(notAfter - Math.max(0, notAfter - issuedAt) / 3);
/** When the order after `failures` failed ones may start. */
export const retryTime = (failures: number, at: number) => at + Math.min(FIRST_RETRY_MS * 2 ** Math.min(failures - 1, 20), LONGEST_RETRY_MS);

/**
 * The orders waiting on this node, taken round robin by account: one account's hundreds of domains do not hold up
 * another account's one (before, one FIFO made them wait for all of them). Each account's own orders keep their order.
 */
export class FairOrderQueue {
  /** Waiting hostnames by account (an account is here only while it has some). */
  private readonly byAccount = new Map<string, string[]>();
  /** The accounts with waiting orders, the next to be served first. */
  private readonly turn: string[] = [];
  private readonly queued = new Set<string>();

  has(hostname: string): boolean {
    return this.queued.has(hostname);
  }

  get size(): number {
    return this.queued.size;
  }

  push(accountId: string, hostname: string): void {
    if (this.queued.has(hostname)) return;
    this.queued.add(hostname);
    const waiting = this.byAccount.get(accountId);
    if (waiting) waiting.push(hostname);
    else {
      this.byAccount.set(accountId, [hostname]);
      this.turn.push(accountId);
    }
  }

  /** The next order: the first waiting of the account whose turn it is; that account then goes last. */
  shift(): string | undefined {
    const accountId = this.turn.shift();
    if (accountId === undefined) return undefined;
    const waiting = this.byAccount.get(accountId)!;
    const hostname = waiting.shift()!;
    if (waiting.length > 0) this.turn.push(accountId);
    else this.byAccount.delete(accountId);
    this.queued.delete(hostname);
    return hostname;
  }
}

/**
 * Certificates of Custom Domains: keeps one row per attached hostname, orders (one order at a time on this node,
 * in the background, fairly between accounts (FairOrderQueue): nothing here is awaited by a request), renews, retries with backoff, and serves the issued
 * ones by SNI (`secureContext`). On several nodes the order is claimed in the row (CertificateStore.claim), so one
 * node orders; every node serves what is stored, read again on the bus notice `worker_certificates` and every minute.
 */
export class CertificateManager {
  private rows = new Map<string, CertificateRow>();
  /** What the last sync found attached (Custom Domains and zones' `*.<zone>`), by hostname. */
  private wanted = new Map<string, CustomDomain>();
  /** SNI answers, with the PEM each was made from (remade only when it changes). */
  private contexts = new Map<string, { certPem: string; context: SecureContext }>();
  /** Custom certificates by zone id, oldest first, with their SNI answers. */
  private custom = new Map<string, { row: CustomCertificateRow; context: SecureContext }[]>();
  private readonly queue = new FairOrderQueue();
  /** The run of queued orders under way, if any. */
  private ordering: Promise<void> | undefined;
  private syncing: Promise<void> | undefined;
  private syncAgain = false;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;
  /** The orders this node finished since it started, by kind and outcome (metrics.ts). */
  readonly orders: Record<OrderedKind, { issued: number; failed: number }> = {
    custom_domain: { issued: 0, failed: 0 },
    zone_edge: { issued: 0, failed: 0 },
  };

  constructor(private readonly deps: CertificateManagerDeps) {}

  /** Every certificate as of the last read of the store: the ordered ones and the uploaded ones (metrics.ts). */
  *certificates(): Generator<CertificateSummary> {
    for (const r of this.rows.values()) yield { kind: orderedKind(r.hostname), status: r.status, notAfter: r.notAfter };
    for (const list of this.custom.values()) for (const c of list) yield { kind: "custom_uploaded", status: "active", notAfter: c.row.expiresOn };
  }

  /** Resolves once the stored certificates are read and served (the node is not ready before); orders run after. */
  async start(): Promise<void> {
    this.unsubscribe = this.deps.bus.subscribe(CERTIFICATES_AREA, () => this.domainsChanged());
    this.timer = setInterval(() => this.domainsChanged(), CHECK_INTERVAL_MS);
    this.timer.unref();
    this.domainsChanged();
    await this.syncing;
  }

  /**
   * Stops ordering and reading: an order under way is given up (the CA may never answer; the platform stops in
   * seconds whatever it does), and this resolves once nothing here uses the store, which can then be closed. The
   * given-up order is not recorded as failed: the lease on it runs out and the next start (or node) orders again.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.unsubscribe?.();
    await this.deps.orderer.close?.();
    await this.ordering;
    await this.syncing;
  }

  /** The context to answer a TLS ClientHello for `servername` with; undefined: no certificate (the handshake fails). */
  secureContext(servername: string): SecureContext | undefined {
    const name = servername.toLowerCase().replace(/\.$/, "");
    // A custom certificate of the zone answering the name wins over the ordered one (as hosted); the newest first.
    const zoneId = this.deps.zoneOf(name);
    const uploaded = zoneId === undefined ? undefined : this.custom.get(zoneId);
    if (uploaded) {
      for (let i = uploaded.length - 1; i >= 0; i--) if (uploaded[i].row.hosts.some((h) => covers(h, name))) return uploaded[i].context;
    }
    if (this.deps.served(name)) return this.contexts.get(name)?.context;
    // The zone's edge certificate: its apex and one label under it (`*.zone`), while the zone has a proxied record.
    const dot = name.indexOf(".");
    for (const zoneName of [name, dot > 0 ? name.slice(dot + 1) : ""]) {
      const owner = zoneName && this.wanted.get(`*.${zoneName}`);
      if (owner && this.deps.zoneOf(name) === this.deps.zoneOf(zoneName)) {
        const context = this.contexts.get(`*.${zoneName}`)?.context;
        if (context) return context;
      }
    }
    return undefined;
  }

  /** The stored row of `hostname` (a zone's edge certificate is at `*.<zone>`). */
  row(hostname: string): CertificateRow | undefined {
    return this.rows.get(hostname);
  }

  /** Whether the zone's edge certificate is wanted (the zone has a proxied record) as of the last sync. */
  zoneWanted(zoneName: string): boolean {
    return this.wanted.has(`*.${zoneName}`);
  }

  /** Reads the stored certificates again now (after an upload or removal through this node) and resolves once served. */
  async refresh(): Promise<void> {
    this.domainsChanged();
    while (this.syncing) await this.syncing;
  }

  /**
   * How many of `hostnames` (the account's attached Custom Domains) have no certificate issued yet: pending (no row
   * read yet, or never issued) or failed. What --acme-pending-per-account bounds at attach.
   */
  notIssued(accountId: string, hostnames: Iterable<string>): number {
    let n = 0;
    for (const h of hostnames) if (this.state(h, accountId).status !== "active") n++;
    return n;
  }

  /**
   * The certificate state of a Custom Domain of `accountId`, as its API answer shows it; pending until its row is
   * read (a row still of the hostname's previous account is not shown: its errors are that account's).
   */
  state(hostname: string, accountId: string): CertificateState {
    const row = this.rows.get(hostname);
    if (!row || row.accountId !== accountId) return { status: "pending" };
    return {
      status: row.status,
      ...(row.notAfter !== null && { expires_on: new Date(row.notAfter).toISOString() }),
      ...(row.lastError !== null && { last_error: row.lastError }),
      ...(row.status !== "active" && { next_attempt_on: new Date(row.nextAttemptAt).toISOString() }),
    };
  }

  /**
   * Called when Custom Domains may have changed (the route table was read again), on a certificate notice and on
   * the timer: makes rows for new domains, deletes those of detached ones, reads the rows and orders what is due.
   * Never waits for an order, and never throws (a failure is logged; the next call tries again).
   */
  domainsChanged(): void {
    if (this.stopped) return;
    if (this.syncing) {
      this.syncAgain = true;
      return;
    }
    this.syncing = (async () => {
      do {
        this.syncAgain = false;
        await this.sync().catch((err: unknown) => this.deps.log.error({ err }, "Custom Domain certificates: could not read or update their rows"));
      } while (this.syncAgain && !this.stopped);
    })().finally(() => (this.syncing = undefined));
  }

  private async sync(): Promise<void> {
    const { store } = this.deps;
    const attached = new Map((await this.deps.attached()).map((d) => [d.hostname, d]));
    this.wanted = attached;
    let rows = await store.all();
    const stored = new Map(rows.map((r) => [r.hostname, r]));
    const t = Date.now();
    let changed = false;
    for (const d of attached.values()) {
      const row = stored.get(d.hostname);
      if (!row || row.accountId !== d.accountId) {
        const zoneCertificate = d.hostname.startsWith("*.");
        await store.ensure(d.hostname, d.accountId, zoneCertificate ? t + ZONE_CERTIFICATE_WAIT_MS : t);
        if (zoneCertificate) this.syncAt(t + ZONE_CERTIFICATE_WAIT_MS);
        changed = true;
      }
    }
    for (const r of rows) {
      if (attached.has(r.hostname)) continue;
      // Detached: its certificate is not served any more (secureContext asks the route table) and is not kept.
      if (await store.delete(r.hostname)) this.deps.log.info({ hostname: r.hostname }, "Custom Domain detached: its certificate was removed");
      changed = true;
    }
    if (changed) rows = await store.all();
    this.rows = new Map(rows.map((r) => [r.hostname, r]));
    await this.buildContexts(rows);
    await this.buildCustomContexts(await store.customCertificates());
    for (const r of rows) if (this.due(r, t)) this.queue.push(r.accountId, r.hostname);
    this.orderNext();
  }

  /** Syncs again at `at` (a row that becomes due then is ordered at once, not at the next check). */
  private syncAt(at: number): void {
    setTimeout(() => this.domainsChanged(), Math.max(0, at - Date.now()) + 50).unref();
  }

  private due(r: CertificateRow, t: number): boolean {
    return r.nextAttemptAt <= t;
  }

  /** Opens the key and makes the TLS context of each certificate that is new or changed; drops the others. */
  private async buildContexts(rows: CertificateRow[]): Promise<void> {
    const next = new Map<string, { certPem: string; context: SecureContext }>();
    for (const r of rows) {
      if (!r.certPem || !r.keySealed) continue;
      const known = this.contexts.get(r.hostname);
      if (known?.certPem === r.certPem) {
        next.set(r.hostname, known);
        continue;
      }
      try {
        const key = this.deps.box.open(r.keySealed, keyContext(r.hostname));
        next.set(r.hostname, { certPem: r.certPem, context: createSecureContext({ cert: r.certPem, key }) });
      } catch (err) {
        // Never the key or the error's text that could carry it: the hostname and the kind of failure.
        this.deps.log.error(
          { hostname: r.hostname, error: (err as Error).name },
          "a stored Custom Domain certificate cannot be served (key or certificate unreadable)",
        );
      }
      // A turn of the event loop between certificates: many renewed at once do not hold requests up.
      await nextTurn();
    }
    this.contexts = next;
  }

  /** The TLS contexts of custom certificates, remade only for those changed (their modified time). */
  private async buildCustomContexts(rows: CustomCertificateRow[]): Promise<void> {
    const known = new Map<string, { row: CustomCertificateRow; context: SecureContext }>();
    for (const list of this.custom.values()) for (const c of list) known.set(c.row.id, c);
    const next = new Map<string, { row: CustomCertificateRow; context: SecureContext }[]>();
    for (const row of rows) {
      let served = known.get(row.id);
      if (!served || served.row.modifiedOn !== row.modifiedOn || served.row.certPem !== row.certPem) {
        try {
          const key = this.deps.box.open(row.keySealed, customKeyContext(row.id));
          served = { row, context: createSecureContext({ cert: row.certPem, key }) };
        } catch (err) {
          this.deps.log.error({ certificate: row.id, zone: row.zoneId, error: (err as Error).name }, "a stored custom certificate cannot be served");
          continue;
        }
        await nextTurn();
      }
      const list = next.get(row.zoneId);
      if (list) list.push(served);
      else next.set(row.zoneId, [served]);
    }
    this.custom = next;
  }

  /** Runs the queued orders one after the other, in the background. */
  private orderNext(): void {
    if (this.ordering || this.stopped) return;
    this.ordering = (async () => {
      let hostname: string | undefined;
      while (!this.stopped && (hostname = this.queue.shift()) !== undefined) {
        await this.orderOne(hostname).catch((err: unknown) =>
          this.deps.log.error({ err, hostname }, "Custom Domain certificate: the order could not be recorded"),
        );
      }
    })().finally(() => (this.ordering = undefined));
  }

  private async orderOne(hostname: string): Promise<void> {
    const { store, log, nodeId } = this.deps;
    const domain = hostname.startsWith("*.") ? this.wanted.get(hostname) : this.deps.served(hostname);
    const row = this.rows.get(hostname);
    // Detached meanwhile, or its zone not known to this node yet: another sync queues it again.
    if (!domain || !row || row.accountId !== domain.accountId) return;
    const started = Date.now();
    if (!(await store.claim(hostname, nodeId, started, ORDER_LEASE_MS))) return;
    log.info(
      { hostname, renewal: row.certPem !== null },
      hostname.startsWith("*.") ? "ordering the certificate of a zone's edge" : "ordering the certificate of a Custom Domain",
    );
    let issued: IssuedCertificate;
    try {
      issued = await this.deps.orderer.order(hostname, this.deps.challenges(hostname, domain.accountId));
    } catch (err) {
      // Given up because the platform stops: nothing is recorded (the store may be closing), see stop().
      if (this.stopped) return void log.info({ hostname }, "a Custom Domain certificate order was given up: the platform is stopping");
      const error = String((err as Error)?.message ?? err).slice(0, MAX_ERROR_CHARS);
      const failures = row.failures + 1;
      const nextAttemptAt = retryTime(failures, Date.now());
      this.orders[orderedKind(hostname)].failed++;
      await store.failed(hostname, nodeId, { error, nextAttemptAt });
      log.warn(
        { hostname, error, failures, next_attempt_on: new Date(nextAttemptAt).toISOString() },
        "a Custom Domain certificate order failed; it is tried again later",
      );
      this.domainsChanged();
      return;
    }
    const keySealed = this.deps.box.seal(issued.keyPem, keyContext(hostname));
    const nextAttemptAt = renewalTime(started, issued.notAfter);
    if (await store.issued(hostname, nodeId, { certPem: issued.certPem, keySealed, notAfter: issued.notAfter, nextAttemptAt })) {
      this.orders[orderedKind(hostname)].issued++;
      log.info(
        { hostname, expires_on: new Date(issued.notAfter).toISOString(), renews_on: new Date(nextAttemptAt).toISOString() },
        "Custom Domain certificate issued",
      );
    }
    this.domainsChanged();
  }
}

/** What a certificate's key is sealed to: its row (a sealed key moved to another hostname's row does not open). */
export const keyContext = (hostname: string) => `worker-certificate:${hostname}`;

/** What a custom certificate's key is sealed to: its id. */
export const customKeyContext = (id: string) => `custom-certificate:${id}`;
