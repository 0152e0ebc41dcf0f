import type { CliContext } from "../core/cli/context.js";
import { UserError } from "../core/errors.js";

/** The id of a zone a command names by id or by domain name (`edgecli cache purge`, `edgecli settings`). */
export async function zoneIdOf(zone: string, ctx: CliContext): Promise<string> {
  if (/^[0-9a-f]{32}$/.test(zone)) return zone;
  const found = await ctx.api().fetchResult<{ id: string }[]>("GET", "/zones", { query: { name: zone.toLowerCase().replace(/\.$/, "") } });
  if (found.length === 0) throw new UserError(`There is no zone ${zone} in the accounts this token can read`, "See `edgecli dns zone list`.");
  return found[0].id;
}
