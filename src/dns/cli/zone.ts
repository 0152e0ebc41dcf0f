import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";

/** The zone fields the CLI shows. */
interface ZoneInfo {
  id: string;
  name: string;
  status: string;
  name_servers: string[];
}

/** A zone named by id or by domain name (every dns command takes either). */
export async function findZone(zone: string, ctx: CliContext): Promise<ZoneInfo> {
  const api = ctx.api();
  if (/^[0-9a-f]{32}$/.test(zone)) return api.fetchResult<ZoneInfo>("GET", `/zones/${zone}`);
  const found = await api.fetchResult<ZoneInfo[]>("GET", "/zones", { query: { name: zone.toLowerCase().replace(/\.$/, "") } });
  if (found.length === 0) throw new UserError(`There is no zone ${zone} in the accounts this token can read`, "See `edgecli dns zone list`.");
  return found[0];
}

/** `edgecli dns zone create <name>` */
export async function createZone(args: { name?: string }, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const z = await ctx.api().fetchResult<ZoneInfo>("POST", "/zones", { json: { name: args.name, account: { id: account } } });
  ctx.log.info(`Created zone ${z.name} with id ${z.id}.\nPoint its NS records at: ${z.name_servers.join(", ")}`);
}

/** `edgecli dns zone list` */
export async function listZones(_args: unknown, ctx: CliContext): Promise<void> {
  const zones = await ctx.api().fetchAllPages<ZoneInfo>("/zones", {}, 50);
  ctx.json(zones.map((z) => ({ id: z.id, name: z.name, status: z.status, name_servers: z.name_servers })));
}

/** `edgecli dns zone delete <zone> [--yes]` */
export async function deleteZone(args: { zone?: string; yes?: boolean }, ctx: CliContext): Promise<void> {
  const z = await findZone(args.zone!, ctx);
  if (!(await ctx.confirmDestructive(`Delete the zone ${z.name} and all its records?`, { given: args.yes, flag: "--yes (-y)" }))) {
    ctx.log.info("Not deleted.");
    return;
  }
  await ctx.api().fetchResult("DELETE", `/zones/${z.id}`);
  ctx.log.info(`Deleted zone ${z.name}.`);
}
