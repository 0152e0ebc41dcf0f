import { readFileSync } from "node:fs";
import type { CliContext } from "../core/cli/context.js";
import { UsageError, UserError } from "../core/errors.js";

interface ZoneInfo {
  id: string;
  name: string;
  status: string;
  name_servers: string[];
}

/** A zone named by id or by domain name. */
async function findZone(zone: string, ctx: CliContext): Promise<ZoneInfo> {
  const api = ctx.api();
  if (/^[0-9a-f]{32}$/.test(zone)) return api.fetchResult<ZoneInfo>("GET", `/zones/${zone}`);
  const found = await api.fetchResult<ZoneInfo[]>("GET", "/zones", { query: { name: zone.toLowerCase().replace(/\.$/, "") } });
  if (found.length === 0) throw new UserError(`There is no zone ${zone} in the accounts this token can read`, "See `edgecli dns zone list`.");
  return found[0];
}

export async function zoneCreate(name: string, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const z = await ctx.api().fetchResult<ZoneInfo>("POST", "/zones", { json: { name, account: { id: account } } });
  ctx.log.info(`Created zone ${z.name} with id ${z.id}.\nPoint its NS records at: ${z.name_servers.join(", ")}`);
}

export async function zoneList(ctx: CliContext): Promise<void> {
  const zones = await ctx.api().fetchAllPages<ZoneInfo>("/zones", {}, 50);
  ctx.json(zones.map((z) => ({ id: z.id, name: z.name, status: z.status, name_servers: z.name_servers })));
}

export async function zoneDelete(zone: string, yes: boolean, ctx: CliContext): Promise<void> {
  const z = await findZone(zone, ctx);
  if (!yes && !(await ctx.confirm(`Delete the zone ${z.name} and all its records?`, false))) {
    ctx.log.info("Not deleted.");
    return;
  }
  await ctx.api().fetchResult("DELETE", `/zones/${z.id}`);
  ctx.log.info(`Deleted zone ${z.name}.`);
}

export async function recordList(zone: string, filter: { type?: string; name?: string }, ctx: CliContext): Promise<void> {
  const z = await findZone(zone, ctx);
  ctx.json(await ctx.api().fetchAllPages(`/zones/${z.id}/dns_records`, { type: filter.type, name: filter.name }, 1000));
}

export async function recordCreate(
  zone: string,
  a: { type?: string; name?: string; content?: string; data?: string; ttl?: number; priority?: number; proxied?: boolean; comment?: string },
  ctx: CliContext,
): Promise<void> {
  if (!a.type || !a.name) throw new UsageError("--type and --name are required");
  if (a.content === undefined && a.data === undefined) throw new UsageError("Give --content, or --data for structured types");
  let data: unknown;
  if (a.data !== undefined) {
    try {
      data = JSON.parse(a.data);
    } catch {
      throw new UsageError(`--data must be JSON, e.g. '{"priority":10,"weight":5,"port":5060,"target":"sip.example.com"}'`);
    }
  }
  const z = await findZone(zone, ctx);
  const body = { type: a.type, name: a.name, content: a.content, data, ttl: a.ttl, priority: a.priority, proxied: a.proxied, comment: a.comment };
  ctx.json(await ctx.api().fetchResult("POST", `/zones/${z.id}/dns_records`, { json: body }));
}

export async function recordDelete(zone: string, id: string, ctx: CliContext): Promise<void> {
  const z = await findZone(zone, ctx);
  await ctx.api().fetchResult("DELETE", `/zones/${z.id}/dns_records/${encodeURIComponent(id)}`);
  ctx.log.info(`Deleted record ${id} from ${z.name}.`);
}

export async function zoneExport(zone: string, ctx: CliContext): Promise<void> {
  const z = await findZone(zone, ctx);
  const res = await ctx.api().raw("GET", `/zones/${z.id}/dns_records/export`);
  const text = await res.body.text();
  if (res.status !== 200) throw new UserError(`Export of ${z.name} failed (HTTP ${res.status}): ${text.slice(0, 300)}`);
  ctx.write(text);
}

export async function zoneImport(zone: string, file: string, proxied: boolean, ctx: CliContext): Promise<void> {
  let text: string;
  try {
    text = file === "-" ? (await ctx.readStdin()).toString("utf8") : readFileSync(file, "utf8");
  } catch (e) {
    throw new UserError(`Cannot read ${file}: ${(e as Error).message}`);
  }
  const z = await findZone(zone, ctx);
  // The API client sends through undici's request(), which takes undici's own FormData class.
  const { FormData } = await import("undici");
  const form = new FormData();
  form.set("file", new Blob([text]), "zone.txt");
  form.set("proxied", String(proxied));
  const r = await ctx.api().fetchResult<{ recs_added: number; total_records_parsed: number }>("POST", `/zones/${z.id}/dns_records/import`, {
    body: form as unknown as globalThis.FormData,
  });
  ctx.log.info(`Imported ${r.recs_added} of ${r.total_records_parsed} records into ${z.name} (records already there are skipped).`);
}
