/** What the transfers area keeps: TSIG keys and peers per account, outgoing transfers per zone, the IXFR journal. */

export interface TsigKeyEntry {
  id: string;
  account_id: string;
  /** The key's name as peers know it: lowercase, no trailing dot. */
  name: string;
  /** Canonical algorithm name (tsig.ts), no trailing dot. */
  algorithm: string;
  /** The shared secret, base64. In clear only in memory: the store keeps it sealed. */
  secret: string;
}

export interface Peer {
  id: string;
  account_id: string;
  name: string;
  ip: string | null;
  port: number;
  tsig_id: string | null;
  ixfr_enable: boolean;
}

/** A zone's outgoing transfers: the peers that may transfer it and are sent NOTIFY. */
export interface Outgoing {
  zone_id: string;
  account_id: string;
  peers: string[];
  enabled: boolean;
  created_time: string;
  last_transferred_time: string | null;
}

/** A secondary zone's incoming transfers: the primaries it is copied from (transfers/secondary.ts). */
export interface Incoming {
  zone_id: string;
  account_id: string;
  peers: string[];
  /** The longest time between two refreshes, whatever the SOA refresh says (NOTIFY refreshes at once). */
  auto_refresh_seconds: number;
  created_time: string;
  modified_time: string;
  /** When a primary last answered a refresh (a SOA check or a transfer): the SOA expire counts from here. */
  checked_time: string | null;
  /** When a primary's records were last taken in (AXFR or IXFR); null until the first transfer. */
  last_transferred_time: string | null;
}

/** What one serial change did to the records a secondary holds (RRs as wire bytes, SOA excluded). */
export interface JournalEntry {
  from_serial: number;
  to_serial: number;
  /** The SOA of each end, as wire RRs. */
  from_soa: Buffer;
  to_soa: Buffer;
  removed: Buffer[];
  added: Buffer[];
}

/** A list of wire RRs as one blob (each prefixed by its two-byte length), for a store column. */
export function packRrs(rrs: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (const r of rrs) {
    const len = Buffer.alloc(2);
    len.writeUInt16BE(r.length);
    parts.push(len, r);
  }
  return Buffer.concat(parts);
}

export function unpackRrs(blob: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o + 2 <= blob.length;) {
    const len = blob.readUInt16BE(o);
    out.push(Buffer.from(blob.subarray(o + 2, o + 2 + len)));
    o += 2 + len;
  }
  return out;
}
