/** D1's limits, as data: the routes, the binding, the executor and the CLI read them from here. */
export const D1_LIMITS = {
  /** A database name: 1-64 characters (the hosted limit), letters, digits, `-` and `_`. */
  nameChars: 64,
  /** The SQL of one request (API or binding), in bytes: the hosted API's body limit for a query. */
  sqlBytes: 10 * 1024 * 1024,
  /** Statements in one request. */
  statements: 10_000,
  /** Bound parameters of one statement (the hosted limit). */
  params: 100,
  /** What one request's results may add up to, in bytes of their JSON; past it the request fails and changes nothing. */
  resultBytes: 32 * 1024 * 1024,
  /** How large one database file may grow (SQLite's max_page_count, set when the executor opens it). */
  databaseBytes: 2 * 1024 * 1024 * 1024,
  /** An import's SQL file. */
  importBytes: 100 * 1024 * 1024,
  /** How long a signed export or import URL stays valid. */
  transferTtlMs: 60 * 60 * 1000,
  /**
   * Signed URLs an account holds at once (exports and imports): each may hold a file on disk (a dump of up to a
   * database's size, an import of up to importBytes) for transferTtlMs; opening one more ends the account's oldest.
   */
  transfersPerAccount: 4,
  /**
   * SQLite's temporary storage (TEMP tables, sorts, transient indexes, materialized subqueries) is kept in the
   * executor's memory (`PRAGMA temp_store = MEMORY`), never in files: unlinked temp files under /var/tmp were counted
   * against nothing (issue 30, hole 5). The executor's memory cap (`--d1-executor-memory`) bounds it.
   */
  tempStore: "MEMORY",
  /** Databases whose executor processes stay open at once; the least recently used idle one closes past it. */
  openExecutors: 16,
  /** An executor with nothing to do closes after this long. */
  executorIdleMs: 60_000,
} as const;
