import { randomBytes } from "node:crypto";
import type { Logger } from "../../core/logger.js";
import { TransferErrors } from "./errors.js";
import type { Incoming, Outgoing, Peer, TsigKeyEntry } from "./model.js";
import type { TransferStore } from "./store.js";
import type { TsigKey } from "../nameserver/tsig.js";

const newId = () => randomBytes(16).toString("hex");

/** Entries of one kind that belong to accounts: an id of another account is answered as missing (`notFound`). */
class AccountEntries<T extends { id: string; account_id: string }> {
  readonly byId = new Map<string, T>();

  constructor(private readonly notFound: () => Error) {}

  of(accountId: string): T[] {
    return [...this.byId.values()].filter((e) => e.account_id === accountId);
  }

  owned(accountId: string, id: string): T {
    const e = this.byId.get(id);
    if (!e || e.account_id !== accountId) throw this.notFound();
    return e;
  }

  /** The entry to write: the fields under the given id (which must be the account's) or a new one. */
  entry(accountId: string, fields: Omit<T, "id" | "account_id">, id?: string): T {
    if (id) this.owned(accountId, id);
    return { ...fields, id: id ?? newId(), account_id: accountId } as T;
  }
}

/**
 * TSIG keys, peers and outgoing transfer settings in memory (the DNS server decides a transfer synchronously), kept
 * current with the store: every write goes to the store first, then here, one at a time. Reads by account never
 * show another account's entries: a foreign id is answered as missing.
 */
export class TransferDirectory {
  private readonly tsigs = new AccountEntries<TsigKeyEntry>(TransferErrors.tsigNotFound);
  private readonly peers = new AccountEntries<Peer>(TransferErrors.peerNotFound);
  private readonly outgoing = new Map<string, Outgoing>();
  private readonly incoming = new Map<string, Incoming>();
  private writes: Promise<unknown> = Promise.resolve();
  private loaded?: Promise<void>;

  constructor(
    readonly store: TransferStore,
    private readonly log: Logger,
  ) {}

  load(): Promise<void> {
    return (this.loaded ??= (async () => {
      for (const t of await this.store.listTsigs()) this.tsigs.byId.set(t.id, t);
      for (const p of await this.store.listPeers()) this.peers.byId.set(p.id, p);
      for (const o of await this.store.listOutgoing()) this.outgoing.set(o.zone_id, o);
      for (const i of await this.store.listIncoming()) this.incoming.set(i.zone_id, i);
    })());
  }

  // TSIG keys

  tsigsOf(accountId: string): TsigKeyEntry[] {
    return this.tsigs.of(accountId);
  }

  tsig(accountId: string, id: string): TsigKeyEntry {
    return this.tsigs.owned(accountId, id);
  }

  /** The key a server signs and verifies with. */
  tsigKey(id: string | null): TsigKey | undefined {
    const t = id ? this.tsigs.byId.get(id) : undefined;
    return t && { name: t.name, algorithm: t.algorithm, secret: Buffer.from(t.secret, "base64") };
  }

  putTsig(accountId: string, fields: Omit<TsigKeyEntry, "id" | "account_id">, id?: string): Promise<TsigKeyEntry> {
    return this.exclusive(async () => {
      const t = this.tsigs.entry(accountId, fields, id);
      await this.store.putTsig(t);
      this.tsigs.byId.set(t.id, t);
      return t;
    });
  }

  deleteTsig(accountId: string, id: string): Promise<void> {
    return this.exclusive(async () => {
      this.tsigs.owned(accountId, id);
      const users = [...this.peers.byId.values()].filter((p) => p.tsig_id === id).map((p) => p.name);
      if (users.length) throw TransferErrors.tsigInUse(users);
      await this.store.deleteTsig(id);
      this.tsigs.byId.delete(id);
    });
  }

  // Peers

  peersOf(accountId: string): Peer[] {
    return this.peers.of(accountId);
  }

  peer(accountId: string, id: string): Peer {
    return this.peers.owned(accountId, id);
  }

  putPeer(accountId: string, fields: Omit<Peer, "id" | "account_id">, id?: string): Promise<Peer> {
    return this.exclusive(async () => {
      const p = this.peers.entry(accountId, fields, id);
      // A peer may only use a key of its own account.
      const t = fields.tsig_id ? this.tsigs.byId.get(fields.tsig_id) : undefined;
      if (fields.tsig_id && t?.account_id !== accountId) throw TransferErrors.unknownTsig();
      await this.store.putPeer(p);
      this.peers.byId.set(p.id, p);
      return p;
    });
  }

  deletePeer(accountId: string, id: string): Promise<void> {
    return this.exclusive(async () => {
      this.peers.owned(accountId, id);
      const users = [...this.outgoing.values(), ...this.incoming.values()].filter((o) => o.peers.includes(id)).map((o) => o.zone_id);
      if (users.length) throw TransferErrors.peerInUse(users);
      await this.store.deletePeer(id);
      this.peers.byId.delete(id);
    });
  }

  // Outgoing transfers

  outgoingOf(zoneId: string): Outgoing | undefined {
    return this.outgoing.get(zoneId);
  }

  /** The peers of a zone's outgoing transfers (none when it has no configuration). */
  outgoingPeers(zoneId: string): Peer[] {
    const o = this.outgoing.get(zoneId);
    return (o?.peers ?? []).map((id) => this.peers.byId.get(id)).filter((p): p is Peer => p !== undefined);
  }

  /** Creates (`create`) or replaces the peer list of a zone's outgoing transfers. */
  putOutgoing(zone: { id: string; account_id: string }, peers: string[], create: boolean): Promise<Outgoing> {
    return this.exclusive(async () => {
      const current = this.outgoing.get(zone.id);
      if (create && current) throw TransferErrors.outgoingExists();
      if (!create && !current) throw TransferErrors.outgoingNotFound();
      for (const id of peers) {
        if (this.peers.byId.get(id)?.account_id !== zone.account_id) throw TransferErrors.unknownPeer(id);
      }
      const o: Outgoing = current
        ? { ...current, peers: [...new Set(peers)] }
        : {
            zone_id: zone.id,
            account_id: zone.account_id,
            peers: [...new Set(peers)],
            enabled: true,
            created_time: new Date().toISOString(),
            last_transferred_time: null,
          };
      await this.store.putOutgoing(o);
      this.outgoing.set(zone.id, o);
      return o;
    });
  }

  setOutgoingEnabled(zoneId: string, enabled: boolean): Promise<Outgoing> {
    return this.updateOutgoing(zoneId, (o) => ({ ...o, enabled }));
  }

  /** Records that a transfer was served (kept in memory at once, written in the background). */
  transferred(zoneId: string): void {
    const o = this.outgoing.get(zoneId);
    if (!o) return;
    void this.updateOutgoing(zoneId, (cur) => ({ ...cur, last_transferred_time: new Date().toISOString() })).catch((err) =>
      this.log.warn({ err, zone_id: zoneId }, "could not record a zone transfer"),
    );
  }

  private updateOutgoing(zoneId: string, change: (o: Outgoing) => Outgoing): Promise<Outgoing> {
    return this.exclusive(async () => {
      const current = this.outgoing.get(zoneId);
      if (!current) throw TransferErrors.outgoingNotFound();
      const o = change(current);
      await this.store.putOutgoing(o);
      this.outgoing.set(zoneId, o);
      return o;
    });
  }

  deleteOutgoing(zoneId: string): Promise<boolean> {
    return this.exclusive(async () => {
      if (!this.outgoing.has(zoneId)) return false;
      await this.store.deleteOutgoing(zoneId);
      this.outgoing.delete(zoneId);
      return true;
    });
  }

  // Incoming transfers (secondary zones)

  incomingOf(zoneId: string): Incoming | undefined {
    return this.incoming.get(zoneId);
  }

  allIncoming(): Incoming[] {
    return [...this.incoming.values()];
  }

  /** The primaries of a secondary zone, in the order configured. */
  incomingPeers(zoneId: string): Peer[] {
    const i = this.incoming.get(zoneId);
    return (i?.peers ?? []).map((id) => this.peers.byId.get(id)).filter((p): p is Peer => p !== undefined);
  }

  /** Creates (`create`) or replaces a secondary zone's incoming configuration. */
  putIncoming(zone: { id: string; account_id: string }, fields: { peers: string[]; auto_refresh_seconds: number }, create: boolean): Promise<Incoming> {
    return this.exclusive(async () => {
      const current = this.incoming.get(zone.id);
      if (create && current) throw TransferErrors.incomingExists();
      if (!create && !current) throw TransferErrors.incomingNotFound();
      for (const id of fields.peers) {
        if (this.peers.byId.get(id)?.account_id !== zone.account_id) throw TransferErrors.unknownPeer(id);
      }
      const t = new Date().toISOString();
      const i: Incoming = {
        zone_id: zone.id,
        account_id: zone.account_id,
        created_time: current?.created_time ?? t,
        checked_time: current?.checked_time ?? null,
        last_transferred_time: current?.last_transferred_time ?? null,
        peers: [...new Set(fields.peers)],
        auto_refresh_seconds: fields.auto_refresh_seconds,
        modified_time: t,
      };
      await this.store.putIncoming(i);
      this.incoming.set(zone.id, i);
      return i;
    });
  }

  /** Records a refresh's outcome (the primary answered; and took records in when `transferred`). */
  refreshed(zoneId: string, transferred: boolean): Promise<Incoming | undefined> {
    return this.exclusive(async () => {
      const current = this.incoming.get(zoneId);
      if (!current) return undefined;
      const t = new Date().toISOString();
      const i = { ...current, checked_time: t, last_transferred_time: transferred ? t : current.last_transferred_time };
      await this.store.putIncoming(i);
      this.incoming.set(zoneId, i);
      return i;
    });
  }

  deleteIncoming(zoneId: string): Promise<boolean> {
    return this.exclusive(async () => {
      if (!this.incoming.has(zoneId)) return false;
      await this.store.deleteIncoming(zoneId);
      this.incoming.delete(zoneId);
      return true;
    });
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.writes.then(work);
    this.writes = run.catch(() => undefined);
    return run;
  }
}
