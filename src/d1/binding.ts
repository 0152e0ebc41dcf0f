import type { IncomingMessage, ServerResponse } from "node:http";
import { jsonReply, sendBindingError, type BindingErrorFormat } from "../core/errors/render.js";
import { readBody } from "../core/http/body.js";
import { MAX_JSON_DEPTH, parseUserJson } from "../core/http/json-input.js";
import type { Logger } from "../core/logger.js";
import { asQueryResult, asRawResult, type D1Databases } from "./databases.js";
import type { D1Query } from "./engine/plan.js";
import { SERVED_BY, type StatementResult } from "./engine/runner.js";
import { D1Errors } from "./errors.js";
import { D1_LIMITS } from "./limits.js";

export interface D1BindingTarget {
  accountId: string;
  databaseId: string;
}

export type D1BindingHandler = (db: D1BindingTarget, req: IncomingMessage, res: ServerResponse) => void;

/**
 * Serves the protocol of workerd's D1 binding: its JavaScript API (`cloudflare-internal:d1-api`, wrapped around
 * a fetcher that is our binding service) POSTs `/query` or `/execute?resultsFormat=…` with `{sql, params}` or an
 * array of them (a batch, one transaction), and reads back `{success, results, meta}` (an array for an array) or
 * `{success: false, error}`, whose `error` it throws as `D1_ERROR: <error>`. The loopback binding server has
 * already decided which database (of which account) the call is for, from the header workerd injects: nothing
 * the script sends names it.
 */
export function createD1BindingHandler(databases: D1Databases, log: Logger): D1BindingHandler {
  return (target, req, res) => {
    handle(databases, target, req, res).catch((err: unknown) => sendBindingError(res, err, D1_BINDING_ERRORS, log, { what: "d1 binding call" }));
  };
}

/** How workerd's D1 API reads a failed call: `{success: false, error}`, whose `error` it throws as `D1_ERROR: <error>`. */
export const D1_BINDING_ERRORS: BindingErrorFormat = {
  refusal: (err) => jsonReply(err.status, { success: false, error: err.message }),
  bug: () => jsonReply(500, { success: false, error: "internal error" }),
};

const NOTHING: StatementResult = {
  columns: [],
  rows: [],
  meta: {
    served_by: SERVED_BY,
    served_by_primary: true,
    duration: 0,
    changes: 0,
    last_row_id: 0,
    changed_db: false,
    size_after: 0,
    rows_read: 0,
    rows_written: 0,
  },
};

const send = (res: ServerResponse, status: number, body: unknown) => {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { "content-type": "application/json", "content-length": bytes.length }).end(bytes);
};

async function handle(databases: D1Databases, target: D1BindingTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://d1");
  if (req.method !== "POST" || (url.pathname !== "/query" && url.pathname !== "/execute")) {
    req.resume();
    throw D1Errors.queryBody(`${req.method} ${url.pathname} is not part of the D1 binding protocol here (dump() is not supported: use export)`);
  }
  const body = parseUserJson(await readBody(req, D1_LIMITS.sqlBytes * 2, () => D1Errors.sqlTooLarge()), MAX_JSON_DEPTH, "keep");
  const many = Array.isArray(body);
  const queries = (many ? body : [body]).map(asQuery);
  const results = await databases.query(target.accountId, target.databaseId, queries);
  const rowsAndColumns = url.searchParams.get("resultsFormat") === "ROWS_AND_COLUMNS";
  // A query of several statements (one of exec's lines can hold more than one) answers for its last.
  // A query with none (a blank or comment-only line) answers as an empty one.
  const shaped = results.map((statements) => (rowsAndColumns ? asRawResult : asQueryResult)(statements.at(-1) ?? NOTHING));
  res.setHeader("x-cf-d1-session-commit-token", `${Date.now().toString(16).padStart(16, "0")}-edge`);
  send(res, 200, many ? shaped : shaped[0]);
}

function asQuery(q: unknown): D1Query {
  const o = q as { sql?: unknown; params?: unknown } | null;
  if (typeof o !== "object" || o === null || typeof o.sql !== "string") throw D1Errors.queryBody("each query must be an object with a string sql");
  if (o.params !== undefined && o.params !== null && !Array.isArray(o.params)) throw D1Errors.queryBody("params must be an array");
  return { sql: o.sql, params: o.params as unknown[] | undefined };
}
