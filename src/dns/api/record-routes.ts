import type { FastifyInstance } from "fastify";
import { ok } from "../../core/http/envelope.js";
import { formParts, registerMultipart } from "../../core/http/multipart.js";
import { pageOf, readPage } from "../../core/http/pagination.js";
import type { DnsConfig } from "../config.js";
import { DnsErrors } from "../errors.js";
import type { DnsRecord } from "../model.js";
import { buildRecord, type EditMode } from "../records/input.js";
import { filterRecords } from "../records/list.js";
import { exportZone, importZone } from "../zones/bind.js";
import type { ZoneService } from "../zones/zone-service.js";
import type { ZoneDraft, ZoneState } from "../zones/zone-state.js";
import { zoneAccount, zoneOf } from "./zone-access.js";
import { recordView } from "./views.js";

type ZoneParams = { Params: { zone_id: string } };
type RecordParams = { Params: { zone_id: string; id: string } };

/** The largest zone file an import takes, as a file part or a plain field. */
const ZONE_FILE_BYTES = 16 * 1024 * 1024;
const importFormErrors = { invalid: DnsErrors.importFormInvalid, tooLarge: DnsErrors.importFormTooLarge };

/** The hosted API's largest batch (paid plans). */
const MAX_BATCH = 3500;
const BATCH_LISTS = ["deletes", "patches", "puts", "posts"] as const;

export async function registerRecordRoutes(app: FastifyInstance, zones: ZoneService, cfg: DnsConfig): Promise<void> {
  await registerMultipart(app, { fileSize: ZONE_FILE_BYTES, fieldSize: ZONE_FILE_BYTES, files: 1, fields: 10 });
  const read = { permission: "dns_read", account: zoneAccount(zones) } as const;
  const edit = { permission: "dns_edit", account: zoneAccount(zones) } as const;
  const view = (zs: ZoneState) => (r: DnsRecord) => recordView(r, zs.zone.name, zones.managedBy(r));
  const managedBy = (r: DnsRecord) => zones.managedBy(r);
  const build = (draft: ZoneDraft, body: unknown, mode: EditMode, id?: string) =>
    buildRecord(zones, draft, body, mode, { id, platform: cfg.platformAddresses, managedBy });
  /** Deletes a record of the draft: missing ones are 404, ones another product keeps are refused. */
  const remove = (draft: ZoneDraft, id: string) => {
    const r = draft.get(id);
    if (!r) throw DnsErrors.recordNotFound();
    const by = managedBy(r);
    if (by !== undefined) throw DnsErrors.managedRecord(by);
    draft.delete(id);
    return r;
  };

  app.get<ZoneParams>("/zones/:zone_id/dns_records", { config: read }, async (req) => {
    const zs = zoneOf(zones, req);
    const q = req.query as Record<string, unknown>;
    const page = readPage(q, { defaultPerPage: 100, maxPerPage: 5_000_000 });
    const { result, result_info } = pageOf(filterRecords(zs.records.values(), q), page);
    return ok(result.map(view(zs)), result_info);
  });

  app.post<ZoneParams>("/zones/:zone_id/dns_records", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    const r = await zones.editRecords(zs, (draft) => build(draft, req.body, "create"));
    return ok(view(zs)(r));
  });

  app.get<ZoneParams>("/zones/:zone_id/dns_records/export", { config: read }, async (req, reply) =>
    reply.type("text/plain; charset=utf-8").send(exportZone(zoneOf(zones, req), cfg)),
  );

  app.post<ZoneParams>("/zones/:zone_id/dns_records/import", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    if (!req.isMultipart()) throw DnsErrors.importNotMultipart();
    let file: string | undefined;
    let proxied = false;
    for await (const part of formParts(req, importFormErrors)) {
      if (part.field === "file") file = part.content.toString("utf8");
      else if (part.field === "proxied") proxied = part.content.toString("utf8") === "true";
    }
    if (file === undefined) throw DnsErrors.importFileMissing();
    const text = file;
    return ok(await zones.editRecords(zs, (draft) => importZone(text, draft, proxied, (body) => build(draft, body, "create"))));
  });

  app.post<ZoneParams>("/zones/:zone_id/dns_records/batch", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const lists = new Map(BATCH_LISTS.map((k) => [k, body[k] ?? []]));
    for (const [k, v] of lists) if (!Array.isArray(v)) throw DnsErrors.batchListNotArray(k);
    const items = (k: (typeof BATCH_LISTS)[number]) => lists.get(k) as unknown[];
    const total = BATCH_LISTS.reduce((n, k) => n + items(k).length, 0);
    if (total > MAX_BATCH) throw DnsErrors.batchTooLarge(MAX_BATCH, total);
    const idOf = (item: unknown, k: string, i: number) => {
      const id = (item as { id?: unknown } | null)?.id;
      if (typeof id !== "string") throw DnsErrors.batchIdRequired(k, i);
      return id;
    };
    // Order of the hosted API: deletes, patches, puts, posts; the first error aborts everything.
    const done = await zones.editRecords(zs, (draft) => ({
      deletes: items("deletes").map((item, i) => remove(draft, idOf(item, "deletes", i))),
      patches: items("patches").map((item, i) => build(draft, item, "patch", idOf(item, "patches", i))),
      puts: items("puts").map((item, i) => build(draft, item, "put", idOf(item, "puts", i))),
      posts: items("posts").map((item) => build(draft, item, "create")),
    }));
    const v = view(zs);
    return ok({ deletes: done.deletes.map(v), patches: done.patches.map(v), puts: done.puts.map(v), posts: done.posts.map(v) });
  });

  app.get<RecordParams>("/zones/:zone_id/dns_records/:id", { config: read }, async (req) => {
    const zs = zoneOf(zones, req);
    const r = zs.records.get(req.params.id);
    if (!r) throw DnsErrors.recordNotFound();
    return ok(view(zs)(r));
  });

  for (const mode of ["put", "patch"] as const) {
    app.route<RecordParams>({
      method: mode === "put" ? "PUT" : "PATCH",
      url: "/zones/:zone_id/dns_records/:id",
      config: edit,
      handler: async (req) => {
        const zs = zoneOf(zones, req);
        const r = await zones.editRecords(zs, (draft) => build(draft, req.body, mode, req.params.id));
        return ok(view(zs)(r));
      },
    });
  }

  app.delete<RecordParams>("/zones/:zone_id/dns_records/:id", { config: edit }, async (req) => {
    const zs = zoneOf(zones, req);
    await zones.editRecords(zs, (draft) => void remove(draft, req.params.id));
    return ok({ id: req.params.id });
  });
}
