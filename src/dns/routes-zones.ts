import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { EdgeError } from "../core/errors.js";
import { ok } from "../core/http/envelope.js";
import { requireAccount } from "../core/http/app.js";
import { readPage, pageOf } from "../core/http/pagination.js";
import { parseWith } from "../core/http/validate.js";
import { zoneOf, type DnsApiContext } from "./context.js";
import { DnsCodes } from "./errors.js";
import type { Zone } from "./model.js";
import { parseZoneName, toAscii } from "./names.js";
import { zoneView } from "./views.js";

const createBody = z
  .object({
    name: z.string(),
    account: z.object({ id: z.string() }).passthrough().optional(),
    type: z.enum(["full"]).optional(),
    jump_start: z.boolean().optional(),
  })
  .passthrough();

const patchBody = z
  .object({
    paused: z.boolean().optional(),
    plan: z.unknown().optional(),
    vanity_name_servers: z.array(z.string()).optional(),
    type: z.enum(["full"]).optional(),
  })
  .strict();

type Q = Record<string, unknown>;
const one = (v: unknown) => (Array.isArray(v) ? String(v[v.length - 1]) : v === undefined ? undefined : String(v));

/** `name=contains:foo`, `name=starts_with:foo`, ... as the zones list accepts them; plain `name=foo` is equality. */
function nameTest(raw: string): (name: string) => boolean {
  const m = /^(equal|not_equal|starts_with|ends_with|contains)(_case_sensitive)?:(.*)$/.exec(raw);
  const op = m?.[1] ?? "equal";
  const cs = !!m?.[2];
  const want = (m ? m[3] : raw).replace(/\.$/, "");
  const w = cs ? toAscii(want) : toAscii(want).toLowerCase();
  return (name) => {
    const n = name; // zone names are stored lowercase
    switch (op) {
      case "not_equal":
        return n !== w;
      case "starts_with":
        return n.startsWith(w);
      case "ends_with":
        return n.endsWith(w);
      case "contains":
        return n.includes(w);
      default:
        return n === w;
    }
  };
}

export function registerZoneRoutes(app: FastifyInstance, ctx: DnsApiContext): void {
  // Zones are shown only to callers who can read their account, and the caller's principal knows those accounts' names.
  const accountName = (req: FastifyRequest, id: string) => req.principal.account(id)?.name ?? "";
  const view = (req: FastifyRequest, z: Zone) => zoneView(z, accountName(req, z.account_id), ctx.cfg.nameServers);

  app.post("/zones", async (req) => {
    const body = parseWith(createBody, req.body ?? {});
    let accountId = body.account?.id;
    if (!accountId) {
      const mine = req.principal.accounts().filter((a) => req.principal.can(a, "dns_edit"));
      if (mine.length !== 1) throw new EdgeError(400, DnsCodes.validation, "account.id is required", { pointer: "/account/id" });
      accountId = mine[0];
    }
    requireAccount(req, accountId, "dns_edit");
    const name = parseZoneName(body.name);
    if (!name)
      throw new EdgeError(400, DnsCodes.zoneNameInvalid, `Invalid domain name "${body.name}": a zone is a registrable domain such as example.com.`, {
        pointer: "/name",
      });
    if (ctx.state.byName.has(name)) throw new EdgeError(400, DnsCodes.zoneExists, `${name} already exists`);
    const zs = ctx.state.createZone(accountId, name, ctx.state.store.accountSettings(accountId));
    return ok(view(req, zs.zone));
  });

  app.get("/zones", async (req) => {
    const q = req.query as Q;
    const page = readPage(q, { defaultPerPage: 20, maxPerPage: 1000 });
    const tests: ((z: Zone) => boolean)[] = [];
    const name = one(q.name);
    if (name)
      tests.push(
        (
          (t) => (z: Zone) =>
            t(z.name)
        )(nameTest(name)),
      );
    const status = one(q.status);
    if (status) tests.push(() => status === "active");
    const acc = one(q["account.id"]);
    if (acc) tests.push((z) => z.account_id === acc);
    const accName = one(q["account.name"]);
    if (accName) tests.push((z) => accountName(req, z.account_id).toLowerCase().includes(accName.toLowerCase()));
    const match = one(q.match) ?? "all";
    if (match !== "all" && match !== "any") throw new EdgeError(400, DnsCodes.validation, 'match must be "any" or "all"', { pointer: "match" });
    const orderBy = one(q.order) ?? "name";
    const keys = new Map<string, (z: Zone) => string>([
      ["name", (z) => z.name],
      ["status", () => "active"],
      ["account.id", (z) => z.account_id],
      ["account.name", (z) => accountName(req, z.account_id)],
      ["plan.id", () => ""],
    ]);
    const sortKey = keys.get(orderBy);
    if (!sortKey) throw new EdgeError(400, DnsCodes.validation, `order must be one of ${[...keys.keys()].join(", ")}`, { pointer: "order" });
    const sign = one(q.direction) === "desc" ? -1 : 1;
    const visible = [...ctx.state.byId.values()]
      .map((zs) => zs.zone)
      .filter((z) => req.principal.can(z.account_id, "dns_read"))
      .filter((z) => tests.length === 0 || (match === "any" ? tests.some((t) => t(z)) : tests.every((t) => t(z))))
      .sort((a, b) => sign * (sortKey(a).localeCompare(sortKey(b)) || a.name.localeCompare(b.name)));
    const { result, result_info } = pageOf(
      visible.map((z) => view(req, z)),
      page,
    );
    return ok(result, result_info);
  });

  app.get<{ Params: { zone_id: string } }>("/zones/:zone_id", async (req) => ok(view(req, zoneOf(ctx, req, req.params.zone_id, "dns_read").zone)));

  app.patch<{ Params: { zone_id: string } }>("/zones/:zone_id", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_edit");
    const body = parseWith(patchBody, req.body ?? {});
    if (body.paused !== undefined) ctx.state.updateZone(zs, { paused: body.paused });
    return ok(view(req, zs.zone));
  });

  app.delete<{ Params: { zone_id: string } }>("/zones/:zone_id", async (req) => {
    const zs = zoneOf(ctx, req, req.params.zone_id, "dns_edit");
    ctx.state.deleteZone(zs);
    return ok({ id: zs.zone.id });
  });
}
