import { rmSync, statSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { ok } from "../core/http/envelope.js";
import { readPage, resultInfo } from "../core/http/pagination.js";
import { parseWith } from "../core/http/validate.js";
import { apiOperation } from "../core/metrics/api-operations.js";
import type { OperationMetrics } from "../core/metrics/operations.js";
import { asQueryResult, asRawResult, type D1Databases } from "./databases.js";
import { databaseFile } from "./engine/engine.js";
import type { D1Query } from "./engine/plan.js";
import { D1Codes, D1Errors } from "./errors.js";
import { D1_LIMITS } from "./limits.js";
import type { D1Transfers } from "./transfers.js";

type Params = { account_id: string; database_id: string };

const BASE = "/accounts/:account_id/d1/database";
const read = { config: { permission: "d1_read" } } as const;
const edit = { config: { permission: "d1_edit" } } as const;
/** Room for the JSON around the largest SQL a request may carry. */
const QUERY_BODY_LIMIT = D1_LIMITS.sqlBytes * 2 + 64 * 1024;

const querySchema = z.object({ sql: z.string(), params: z.array(z.unknown()).nullish() });
/** `{ sql, params }`, or `{ batch: [{ sql, params }, …] }` (several queries with their own parameters, one transaction). */
const queryBody = z.union([z.object({ batch: z.array(querySchema).min(1) }), querySchema]);

const exportBody = z.object({
  output_format: z.string().optional(),
  current_bookmark: z.string().nullish(),
  dump_options: z.object({ no_schema: z.boolean().optional(), no_data: z.boolean().optional(), tables: z.array(z.string()).optional() }).optional(),
});

const importBody = z.discriminatedUnion("action", [
  z.object({ action: z.literal("init"), etag: z.string() }),
  z.object({ action: z.literal("ingest"), etag: z.string(), filename: z.string() }),
  z.object({ action: z.literal("poll"), current_bookmark: z.string().nullish() }),
]);

export interface D1RouteDeps {
  databases: D1Databases;
  transfers: D1Transfers;
  /** Where the database files are (for their sizes in listings). */
  dir: string;
  /** The URL a signed transfer is reached at. */
  transferUrl(token: string): string;
  /** Where the routes that run SQL, export and import are counted as D1 operations (`via="api"`). */
  metrics?: OperationMetrics;
}

/** A bookmark of the hosted API's shape; this platform has one copy of each database, so it only names the moment. */
const bookmark = () => `${Date.now().toString(16).padStart(16, "0")}-00000000-00000000-edge`;

/**
 * The v4 D1 routes. The guard has checked the caller's permission on `account_id`; every database is looked up in
 * that account only (D1Databases), so another account's uuid answers 404 as an unknown one does.
 */
export function registerD1Routes(app: FastifyInstance, deps: D1RouteDeps): void {
  const { databases, transfers } = deps;
  const fileSize = (uuid: string) => {
    try {
      return statSync(databaseFile(deps.dir, uuid)).size;
    } catch {
      return 0;
    }
  };
  /** Each import's last answer, for `poll`, by database. */
  const lastImport = new Map<string, unknown>();

  app.get(BASE, read, async (req) => {
    const { account_id } = req.params as Params;
    const q = req.query as Record<string, string | undefined>;
    const page = readPage(q, { defaultPerPage: 1000, maxPerPage: 10000, minPerPage: 10, code: D1Codes.badRequest });
    const { databases: list, total } = await databases.store.listDatabases(account_id, { name: q.name || undefined, offset: page.offset, limit: page.perPage });
    return ok(
      list.map((d) => ({ ...d, file_size: fileSize(d.uuid) })),
      resultInfo(page, list.length, total),
    );
  });

  app.post(BASE, edit, async (req) => {
    const { account_id } = req.params as Params;
    const body = req.body as { name?: unknown; jurisdiction?: unknown } | undefined;
    const name = body?.name;
    if (typeof name !== "string") throw D1Errors.nameMissing();
    // primary_location_hint is a hint the hosted API may also not follow; a jurisdiction is a promise, so it is refused.
    if (body?.jurisdiction != null) throw D1Errors.jurisdictionUnsupported();
    return ok(await databases.store.createDatabase(account_id, name));
  });

  app.get(`${BASE}/:database_id`, read, async (req) => {
    const { account_id, database_id } = req.params as Params;
    const db = await databases.get(account_id, database_id);
    const stats = await databases.engine.stats(account_id, db.uuid);
    return ok({ ...db, num_tables: stats.tables, file_size: stats.size, running_in_region: "local" });
  });

  app.delete(`${BASE}/:database_id`, edit, async (req) => {
    const { account_id, database_id } = req.params as Params;
    await databases.delete(account_id, database_id);
    return ok(null);
  });

  const queries = (body: unknown): D1Query[] => {
    const b = body as { sql?: unknown; batch?: unknown } | undefined;
    if (typeof b !== "object" || b === null || (b.sql === undefined && b.batch === undefined))
      throw D1Errors.queryBody("give sql (with optional params), or batch: [{ sql, params }, …]");
    const parsed = parseWith(queryBody, body, D1Codes.badRequest);
    return "batch" in parsed ? parsed.batch : [parsed];
  };

  app.post(`${BASE}/:database_id/query`, { ...edit, ...apiOperation(deps.metrics, "query"), bodyLimit: QUERY_BODY_LIMIT }, async (req) => {
    const { account_id, database_id } = req.params as Params;
    return ok((await databases.query(account_id, database_id, queries(req.body))).flat().map(asQueryResult));
  });

  app.post(`${BASE}/:database_id/raw`, { ...edit, ...apiOperation(deps.metrics, "query"), bodyLimit: QUERY_BODY_LIMIT }, async (req) => {
    const { account_id, database_id } = req.params as Params;
    return ok((await databases.query(account_id, database_id, queries(req.body))).flat().map(asRawResult));
  });

  app.post(`${BASE}/:database_id/export`, { ...edit, ...apiOperation(deps.metrics, "export") }, async (req) => {
    const { account_id, database_id } = req.params as Params;
    const body = parseWith(exportBody, req.body ?? {}, D1Codes.badRequest);
    if (body.output_format !== undefined && body.output_format !== "polling") throw D1Errors.exportFormat();
    const db = await databases.get(account_id, database_id);
    const { token, file } = transfers.open("export", account_id, db.uuid);
    const o = body.dump_options ?? {};
    await databases.engine.dump(account_id, db.uuid, file, { noSchema: o.no_schema, noData: o.no_data, tables: o.tables });
    return ok({
      success: true,
      type: "export",
      at_bookmark: bookmark(),
      status: "complete",
      messages: [],
      result: { filename: `${db.name}-${token.slice(0, 8)}.sql`, signed_url: deps.transferUrl(token) },
    });
  });

  app.post(`${BASE}/:database_id/import`, { ...edit, ...apiOperation(deps.metrics, "import") }, async (req) => {
    const { account_id, database_id } = req.params as Params;
    const body = parseWith(importBody, req.body, D1Codes.badRequest);
    const db = await databases.get(account_id, database_id);
    if (body.action === "poll") {
      const last = lastImport.get(db.uuid);
      if (!last) throw D1Errors.nothingToPoll();
      return ok(last);
    }
    if (!/^[0-9a-f]{32}$/.test(body.etag)) throw D1Errors.importEtag();
    if (body.action === "init") {
      const { token } = transfers.open("import", account_id, db.uuid);
      return ok({ success: true, filename: token, upload_url: deps.transferUrl(token) });
    }
    const file = transfers.takeUpload(body.filename, account_id, db.uuid, body.etag);
    try {
      const done = await databases.engine.importSql(account_id, db.uuid, file);
      const answer = {
        success: true,
        type: "import",
        at_bookmark: bookmark(),
        status: "complete",
        messages: [`Imported ${done.statements} statements`],
        errors: [],
        result: {
          success: true,
          num_queries: done.statements,
          final_bookmark: bookmark(),
          meta: {
            served_by: "edge-platform-d1",
            duration: done.duration,
            changes: done.rowsWritten,
            rows_read: 0,
            rows_written: done.rowsWritten,
            size_after: done.size,
          },
        },
      };
      lastImport.set(db.uuid, answer);
      return ok(answer);
    } finally {
      rmSync(file, { force: true });
    }
  });
}

/**
 * The route options of a signed URL: the token in its path is a credential, so the request is not logged (Fastify's
 * "incoming request" line carries the URL; warnings and errors carry no URL).
 */
const SIGNED_URL = { logLevel: "warn" } as const;

/** The signed URLs of exports (GET) and imports (PUT), outside /client/v4: the token in the path is the credential. */
export function registerD1TransferRoutes(app: FastifyInstance, transfers: D1Transfers): void {
  app.get("/d1-transfers/:token", SIGNED_URL, async (req, reply) => {
    const { token } = req.params as { token: string };
    reply.hijack();
    try {
      await transfers.download(token, reply.raw);
    } catch (err) {
      if (!reply.raw.headersSent) reply.raw.writeHead(404, { "content-type": "text/plain" }).end(`${(err as Error).message}\n`);
      else reply.raw.destroy();
    }
  });
  // The body is the SQL file, streamed to disk as it arrives: no parser, no body limit but the import's own.
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));
    scope.put("/d1-transfers/:token", SIGNED_URL, async (req, reply) => {
      const { token } = req.params as { token: string };
      const md5 = await transfers.upload(token, req.raw);
      return reply.header("etag", `"${md5}"`).send(ok(null));
    });
  });
}
