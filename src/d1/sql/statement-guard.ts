import type { Statement } from "./statements.js";

/**
 * Which statements D1 runs. A database is one file the platform owns, so nothing may reach past it: ATTACH would
 * open (or create) any file the platform can write, VACUUM INTO writes a copy anywhere, and most PRAGMAs change
 * how the file is kept (journal mode, page size, writable_schema…). Transactions are the platform's: each request
 * (a query, a batch) is one, so BEGIN/COMMIT/SAVEPOINT are refused as the hosted D1 refuses them. Extension loading
 * is already off in better-sqlite3 (`load_extension()` answers "not authorized"), and better-sqlite3 exposes
 * neither an authorizer nor sqlite3_limit, so this is decided from the statement's first keywords.
 *
 * Returns what is refused (for D1Errors.refused), or undefined when the statement may run.
 */
export function refusedStatement(statement: Statement): string | undefined {
  const t = statement.tokens;
  let i = 0;
  // EXPLAIN [QUERY PLAN] <statement> compiles the statement without running it; judge the statement anyway.
  if (word(t, i) === "EXPLAIN") {
    i++;
    if (word(t, i) === "QUERY" && word(t, i + 1) === "PLAN") i += 2;
  }
  const first = word(t, i);
  switch (first) {
    case "ATTACH":
    case "DETACH":
      return `${first} (a D1 database is one file)`;
    case "BEGIN":
    case "COMMIT":
    case "END":
    case "ROLLBACK":
    case "SAVEPOINT":
    case "RELEASE":
      return `${first}: each request runs in one transaction already (use batch() to run several statements atomically)`;
    case "VACUUM":
      if (t.some((tok) => tok.kind === "word" && tok.text === "INTO")) return "VACUUM INTO (it writes a file outside the database)";
      return undefined;
    case "PRAGMA":
      return refusedPragma(statement, i + 1);
    case "CREATE":
      return refusedVirtualTable(statement, i + 1);
  }
  // Pragma functions are read-only, but this one shows where the platform keeps its files.
  if (t.some((tok) => (tok.kind === "word" || tok.kind === "quoted") && tok.text.toUpperCase() === "PRAGMA_DATABASE_LIST")) return "pragma_database_list";
  return undefined;
}

const word = (t: Statement["tokens"], i: number): string | undefined => (t[i]?.kind === "word" ? t[i]!.text : undefined);

/**
 * PRAGMAs that only read the schema or checks, or change a setting of the connection's current transaction or of
 * the query planner (what the hosted D1 allows); `user_version` is kept in the file and is the application's.
 */
const ALLOWED_PRAGMAS = new Set([
  "TABLE_INFO",
  "TABLE_XINFO",
  "TABLE_LIST",
  "INDEX_LIST",
  "INDEX_INFO",
  "INDEX_XINFO",
  "FOREIGN_KEY_LIST",
  "FOREIGN_KEY_CHECK",
  "FOREIGN_KEYS",
  "DEFER_FOREIGN_KEYS",
  "INTEGRITY_CHECK",
  "QUICK_CHECK",
  "OPTIMIZE",
  "CASE_SENSITIVE_LIKE",
  "IGNORE_CHECK_CONSTRAINTS",
  "LEGACY_ALTER_TABLE",
  "RECURSIVE_TRIGGERS",
  "REVERSE_UNORDERED_SELECTS",
  "COLLATION_LIST",
  "FUNCTION_LIST",
  "PAGE_COUNT",
  "PAGE_SIZE",
  "FREELIST_COUNT",
  "DATA_VERSION",
  "USER_VERSION",
]);

function refusedPragma(statement: Statement, at: number): string | undefined {
  const t = statement.tokens;
  let name = t[at];
  // PRAGMA main.table_info(x): only the database itself, never another schema.
  if (t[at + 1]?.text === ".") {
    const schema = t[at]?.text.toUpperCase();
    if (schema !== "MAIN") return `PRAGMA on schema "${t[at]?.text}"`;
    name = t[at + 2];
  }
  if (!name || (name.kind !== "word" && name.kind !== "quoted")) return "PRAGMA without a name";
  const upper = name.text.toUpperCase();
  if (!ALLOWED_PRAGMAS.has(upper)) return `PRAGMA ${name.text}`;
  // PRAGMA page_size = N rewrites the file on the next VACUUM: reading it is fine, setting it is not.
  if (upper === "PAGE_SIZE" && t.some((tok) => tok.text === "=" || tok.text === "(")) return "setting PRAGMA page_size";
  return undefined;
}

/** Virtual table modules of SQLite's own that keep everything in the database: full-text search and R*Trees. */
const ALLOWED_MODULES = new Set(["FTS3", "FTS4", "FTS5", "RTREE", "RTREE_I32"]);

function refusedVirtualTable(statement: Statement, at: number): string | undefined {
  const t = statement.tokens;
  if (word(t, at) !== "VIRTUAL") return undefined;
  const using = t.findIndex((tok) => tok.kind === "word" && tok.text === "USING");
  const module = t[using + 1];
  if (using < 0 || !module) return undefined; // SQLite's own syntax error
  return ALLOWED_MODULES.has(module.text.toUpperCase()) ? undefined : `the virtual table module ${module.text}`;
}
