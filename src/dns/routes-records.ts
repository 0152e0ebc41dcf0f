import type { FastifyInstance } from "fastify";
import { EdgeError, Codes } from "../core/errors.js";
import { ok } from "../core/http/envelope.js";
import { formParts, registerMultipart } from "../core/http/multipart.js";
import { pageOf, readPage } from "../core/http/pagination.js";
import { exportZone, importZone } from "./bind.js";
import { zoneOf, type DnsApiContext } from "./context.js";
import { DnsCodes, recordNotFound } from "./errors.js";
import { buildRecord, type EditMode } from "./record-input.js";
import { filterRecords } from "./record-list.js";
import { ZoneDraft, type ZoneState } from "./state.js";
import { recordView } from "./views.js";

type ZoneParams = { Params: { zone_id: string } };
type RecordParams = { Params: { zone_id: string; id: string } };

/** The largest zone file an import takes, as a file part or a plain field. */
const ZONE_FILE_BYTES = 16 * 1024 * 1024;
const importErrors = {
  invalid: (message: string) => new EdgeError(400, DnsCodes.validation, message),
  tooLarge: (message: string) => new EdgeError(413, Codes.bodyTooLarge, message),
};

/** The hosted API's largest batch (paid plans). */
const MAX_BATCH = 3500;

export async function registerRecordRoutes(app: FastifyInstance, ctx: DnsApiContext): Promise<void> {
  await registerMultipart(app, { fileSize: ZONE_FILE_BYTES, fieldSize: ZONE_FILE_BYTES, files: 1, fields: 10 });
  const view = (zs: ZoneState) => (r: Parameters<typeof recordView>[0]) => recordView(r, zs.zone.name);
  const build = (draft: ZoneDraft, body: unknown, mode: EditMode, id?: string) =>
    buildRecord(ctx.state, draft, body, mode, { id, platform: ctx.cfg.platformAddresses });

  app.get<ZoneParams>("/zones/:zone_id/dns_records", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_read");
    const q = req.query as Record<string, unknown>;
    const page = readPage(q, { defaultPerPage: 100, maxPerPage: 5_000_000 });
    const { result, result_info } = pageOf(filterRecords(zs.records.values(), q), page);
    return ok(result.map(view(zs)), result_info);
  });

  app.post<ZoneParams>("/zones/:zone_id/dns_records", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_edit");
    const draft = new ZoneDraft(zs);
    const r = build(draft, req.body, "create");
    ctx.state.commit(draft);
    return ok(view(zs)(r));
  });

  app.get<ZoneParams>("/zones/:zone_id/dns_records/export", async (req, reply) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_read");
    return reply.type("text/plain; charset=utf-8").send(exportZone(zs, ctx.cfg));
  });

  app.post<ZoneParams>("/zones/:zone_id/dns_records/import", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_edit");
    if (!req.isMultipart()) throw new EdgeError(400, DnsCodes.validation, 'Send the zone file as multipart/form-data in the field "file".');
    let file: string | undefined;
    let proxied = false;
    for await (const part of formParts(req, importErrors)) {
      if (part.field === "file") file = part.content.toString("utf8");
      else if (part.field === "proxied") proxied = part.content.toString("utf8") === "true";
    }
    if (file === undefined) throw new EdgeError(400, DnsCodes.validation, 'The multipart field "file" with the zone file is missing.', { pointer: "file" });
    const draft = new ZoneDraft(zs);
    const result = importZone(file, draft, proxied, (body) => build(draft, body, "create"));
    ctx.state.commit(draft);
    return ok(result);
  });

  app.post<ZoneParams>("/zones/:zone_id/dns_records/batch", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_edit");
    const body = (req.body ?? {}) as Record<string, unknown>;
    const lists: Record<"deletes" | "patches" | "puts" | "posts", unknown> = {
      deletes: body.deletes ?? [],
      patches: body.patches ?? [],
      puts: body.puts ?? [],
      posts: body.posts ?? [],
    };
    for (const [k, v] of Object.entries(lists)) {
      if (!Array.isArray(v)) throw new EdgeError(400, DnsCodes.validation, `${k} must be an array`, { pointer: `/${k}` });
    }
    const total = Object.values(lists).reduce<number>((n, l) => n + (l as unknown[]).length, 0);
    if (total > MAX_BATCH) throw new EdgeError(400, DnsCodes.validation, `A batch holds at most ${MAX_BATCH} changes; this one has ${total}.`);
    const draft = new ZoneDraft(zs);
    const idOf = (item: unknown, k: string, i: number) => {
      const id = (item as { id?: unknown } | null)?.id;
      if (typeof id !== "string") throw new EdgeError(400, DnsCodes.validation, `${k}[${i}].id is required`, { pointer: `/${k}/${i}/id` });
      return id;
    };
    // Order of the hosted API: deletes, patches, puts, posts; the first error aborts everything.
    const deletes = (lists.deletes as unknown[]).map((item, i) => {
      const r = draft.get(idOf(item, "deletes", i));
      if (!r) throw recordNotFound();
      draft.delete(r.id);
      return r;
    });
    const patches = (lists.patches as unknown[]).map((item, i) => build(draft, item, "patch", idOf(item, "patches", i)));
    const puts = (lists.puts as unknown[]).map((item, i) => build(draft, item, "put", idOf(item, "puts", i)));
    const posts = (lists.posts as unknown[]).map((item) => build(draft, item, "create"));
    ctx.state.commit(draft);
    const v = view(zs);
    return ok({ deletes: deletes.map(v), patches: patches.map(v), puts: puts.map(v), posts: posts.map(v) });
  });

  app.get<RecordParams>("/zones/:zone_id/dns_records/:id", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_read");
    const r = zs.records.get(req.params.id);
    if (!r) throw recordNotFound();
    return ok(view(zs)(r));
  });

  const edit = (mode: EditMode) => async (req: { params: { zone_id: string; id: string }; body: unknown } & Parameters<typeof zoneOf>[1]) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_edit");
    const draft = new ZoneDraft(zs);
    const r = build(draft, req.body, mode, req.params.id);
    ctx.state.commit(draft);
    return ok(view(zs)(r));
  };
  app.put<RecordParams>("/zones/:zone_id/dns_records/:id", edit("put"));
  app.patch<RecordParams>("/zones/:zone_id/dns_records/:id", edit("patch"));

  app.delete<RecordParams>("/zones/:zone_id/dns_records/:id", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_edit");
    if (!zs.records.has(req.params.id)) throw recordNotFound();
    const draft = new ZoneDraft(zs);
    draft.delete(req.params.id);
    ctx.state.commit(draft);
    return ok({ id: req.params.id });
  });
}
