import type { Incoming, JournalEntry, Outgoing, Peer, TsigKeyEntry } from "./model.js";

/** How much of a zone's history the journal keeps: at most this many changes, and this many records in them. */
export interface JournalBounds {
  maxEntries: number;
  maxRecords: number;
}

/**
 * Durable state of zone transfers (sqlite-store.ts is the SQLite implementation; store.contract.ts says what every
 * implementation does). Everything is read once at start into memory (directory.ts) and kept current by the
 * directory's writes, because the DNS server decides transfers synchronously. TSIG secrets are sealed at rest.
 */
export interface TransferStore {
  listTsigs(): Promise<TsigKeyEntry[]>;
  putTsig(t: TsigKeyEntry): Promise<void>;
  deleteTsig(id: string): Promise<void>;
  listPeers(): Promise<Peer[]>;
  putPeer(p: Peer): Promise<void>;
  deletePeer(id: string): Promise<void>;
  listOutgoing(): Promise<Outgoing[]>;
  putOutgoing(o: Outgoing): Promise<void>;
  deleteOutgoing(zoneId: string): Promise<void>;
  listIncoming(): Promise<Incoming[]>;
  putIncoming(i: Incoming): Promise<void>;
  deleteIncoming(zoneId: string): Promise<void>;
  /** Adds a change to the zone's journal, then drops the oldest changes until it is within `bounds`. */
  appendJournal(zoneId: string, entry: JournalEntry, bounds: JournalBounds): Promise<void>;
  /** The zone's journal, oldest change first. */
  journal(zoneId: string): Promise<JournalEntry[]>;
  deleteJournal(zoneId: string): Promise<void>;
}
