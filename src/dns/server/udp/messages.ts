/** What the main process and its UDP answering processes say to each other over the IPC channel. */
import type { QueryCount } from "../query-counts.js";

/** Where an answering process binds (its own socket on the port, or the cluster primary's shared one), as JSON in its environment. */
export interface AnsweringProcessBind {
  host: string;
  port: number;
}
export const BIND_ENV = "EDGE_DNS_UDP_BIND";

export type ToAnsweringProcess =
  /** Forget every cached answer, then acknowledge generation g. */
  | { t: "flush"; g: number }
  /** The answer to query s (null: the query is dropped, it was not a query). */
  | { t: "answer"; s: number; a: Buffer | null }
  /** An answer built before anyone asked (src/dns/server/prewarm.ts): cache it for queries like q. */
  | { t: "cache"; q: Buffer; a: Buffer };

export type FromAnsweringProcess =
  /** native: "" when the addon answers cached queries, else why this process answers in JavaScript. */
  | { t: "ready"; native: string }
  | { t: "bind-error"; code: string; message: string }
  | { t: "flushed"; g: number }
  /**
   * What the process answered since its last report (every few seconds, when anything changed): answered queries as
   * [cell, n, ...] (wire-stats.ts), and its cache's hits and misses (the native thread's included).
   */
  | AnsweringStats
  /**
   * A query the process has no cached answer for; the main process answers it from the zones. `from`: the sender's
   * address, sent only with a NOTIFY, whose answer depends on who sent it (a primary of a secondary zone) and is
   * never cached.
   */
  | { t: "query"; s: number; q: Buffer; from?: string }
  /** The answers this process sent since its last counts, by question and rcode (query-counts.ts): DNS analytics. */
  | { t: "counts"; c: QueryCount[] };

/** An answering process's counts since its last report (see FromAnsweringProcess): the metrics. */
export interface AnsweringStats {
  t: "stats";
  answered: number[];
  hits: number;
  misses: number;
}
