import { EdgeError } from "../core/errors.js";
import { D1_LIMITS } from "./limits.js";

/** D1's error codes: 7404 and 7502 are the hosted API's (wrangler reads them), the others ours, one per kind of refusal. */
export const D1Codes = {
  badRequest: 7400,
  databaseNotFound: 7404,
  /** The statement failed in SQLite: the message is SQLite's. */
  sqlError: 7500,
  /** A statement D1 does not run (ATTACH, PRAGMA that reaches outside the file, BEGIN…). */
  statementRefused: 7501,
  nameTaken: 7502,
  queryTimeout: 7429,
  resultTooLarge: 7413,
  /** The hosted API's "System limit reached: databases per account" (wrangler 4 reads it). */
  databaseLimit: 7406,
  /** Ours: every executor this node or the account may keep busy is busy; try again shortly. */
  overloaded: 7430,
  /** The operation is not available on this platform (distributed mode, an export format). */
  unsupported: 7503,
} as const;

const badRequest = (message: string) => new EdgeError(400, D1Codes.badRequest, message);

/** D1's refusals. Every message is written here once; the store, the routes, the binding and the CLI throw these. */
export const D1Errors = {
  // ---- databases ----
  databaseNotFound: () => new EdgeError(404, D1Codes.databaseNotFound, "The database could not be found in this account"),
  nameTaken: (name: string) => new EdgeError(400, D1Codes.nameTaken, `A database with the name "${name}" already exists in this account`),
  databaseLimit: (max: number) => new EdgeError(400, D1Codes.databaseLimit, `System limit reached: databases per account (${max})`),
  nameInvalid: () => badRequest(`A database name must be 1-${D1_LIMITS.nameChars} characters: letters, digits, "-" and "_", starting with a letter or digit`),
  nameMissing: () => badRequest("The body must be JSON with a string `name`"),
  /** A jurisdiction promises data residency (EU, FedRAMP) this platform cannot make. */
  jurisdictionUnsupported: () => badRequest("jurisdiction: jurisdictions are not supported here (no data-residency guarantee is made); only null is accepted"),
  /** Distributed mode: the files are one node's. */
  distributed: () =>
    new EdgeError(
      400,
      D1Codes.unsupported,
      "D1 is not available when the platform runs on PostgreSQL (--database-url): D1 databases are SQLite files on one node and are not shared between nodes yet",
    ),

  // ---- queries ----
  queryBody: (why: string) => badRequest(`The query body is invalid: ${why}`),
  noStatements: () => badRequest("No SQL statements detected."),
  tooManyStatements: () => badRequest(`A request may hold at most ${D1_LIMITS.statements} statements`),
  sqlTooLarge: () => new EdgeError(413, D1Codes.badRequest, `The SQL of a request may be at most ${D1_LIMITS.sqlBytes} bytes`),
  paramsWithManyStatements: () => badRequest("params can only be given with a single statement; use batch for several statements with parameters"),
  tooManyParams: () => badRequest(`A statement may have at most ${D1_LIMITS.params} bound parameters`),
  paramType: (index: number) => badRequest(`params[${index}] must be a string, a number, a boolean, null or an array of bytes (0-255): D1 binds nothing else`),
  /** SQLite refused the statement: its message, as the hosted API gives it. */
  sql: (message: string) => new EdgeError(400, D1Codes.sqlError, message),
  refused: (what: string) => new EdgeError(400, D1Codes.statementRefused, `${what} is not allowed in D1`),
  timeout: (ms: number) =>
    new EdgeError(
      400,
      D1Codes.queryTimeout,
      `D1 query exceeded the time limit of ${ms} ms and was stopped; nothing it changed was kept. Make the query cheaper (an index, a LIMIT) or split it.`,
    ),
  resultTooLarge: () =>
    new EdgeError(
      413,
      D1Codes.resultTooLarge,
      `The results of the request exceed ${D1_LIMITS.resultBytes} bytes; nothing it changed was kept. Select less (LIMIT, fewer columns).`,
    ),
  /** Too many databases are running requests at once (on the node, or of the account): nothing ran. */
  overloaded: (scope: "node" | "account", max: number) =>
    new EdgeError(
      429,
      D1Codes.overloaded,
      scope === "node"
        ? `D1 is busy: ${max} databases are running requests on this node; nothing ran, try again shortly`
        : `D1 is busy for this account: ${max} of its databases are running requests; nothing ran, try again shortly`,
    ),
  /** The executor died under the query (e.g. out of memory): nothing it changed was kept. */
  executorDied: () => new EdgeError(400, D1Codes.sqlError, "The query stopped the database's executor (out of memory?); nothing it changed was kept"),

  // ---- export and import ----
  exportFormat: () => badRequest('Only output_format "polling" is supported: the answer carries a signed_url to download the SQL from'),
  importAction: () => badRequest('action must be "init", "ingest" or "poll"'),
  importEtag: () => badRequest("etag must be the MD5 of the file to import, as 32 hex digits"),
  importNotUploaded: () => badRequest("No file with that name and etag was uploaded for this database: start again with action init"),
  importTooLarge: () => new EdgeError(413, D1Codes.badRequest, `An import may be at most ${D1_LIMITS.importBytes} bytes`),
  nothingToPoll: () => badRequest("No import or export of this database is in progress"),
  transferNotFound: () => new EdgeError(404, D1Codes.badRequest, "This signed URL is unknown or has expired"),
} as const;
