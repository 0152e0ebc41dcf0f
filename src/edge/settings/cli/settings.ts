import type { CliContext } from "../../../core/cli/context.js";
import { UserError } from "../../../core/errors.js";
import { zoneIdOf } from "../../zone-arg.js";

interface Setting {
  id: string;
  value: string | number;
  modified_on: string | null;
  time_remaining?: number;
}

/**
 * `edgecli settings get <zone> [setting]`: one setting's value alone (for scripts), or every setting as JSON
 * `{id: value}` in the API's order.
 */
export async function getSettings(args: { zone?: string; setting?: string }, ctx: CliContext): Promise<void> {
  if (args.setting) settingName(args.setting);
  const id = await zoneIdOf(args.zone!, ctx);
  if (args.setting) {
    const s = await ctx.api().fetchResult<Setting>("GET", `/zones/${id}/settings/${encodeURIComponent(args.setting)}`);
    ctx.write(`${s.value}\n`);
    return;
  }
  const all = await ctx.api().fetchResult<Setting[]>("GET", `/zones/${id}/settings`);
  ctx.json(Object.fromEntries(all.map((s) => [s.id, s.value])));
}

/**
 * `edgecli settings set <zone> <setting> <value>`: the PATCH of one setting. A value of digits is sent as a number
 * (`browser_cache_ttl 3600`), anything else as the string it is (`1.2`, `on`, `strict`); the server says what a
 * setting takes when it refuses one.
 */
export async function setSetting(args: { zone?: string; setting?: string; value?: string }, ctx: CliContext): Promise<void> {
  settingName(args.setting!);
  const id = await zoneIdOf(args.zone!, ctx);
  const raw = args.value!;
  const value = /^\d{1,9}$/.test(raw) ? Number(raw) : raw;
  const s = await ctx.api().fetchResult<Setting>("PATCH", `/zones/${id}/settings/${encodeURIComponent(args.setting!)}`, { json: { value } });
  ctx.log.info(`Set ${s.id} of ${args.zone} to ${s.value}.`);
}

/**
 * Refuses a name no setting has that would not stay one path segment: `.` and `..` survive encodeURIComponent, and
 * the URL parser then took them as the path's own dots (`settings set <zone> .. on` was a PATCH of `/zones/<id>/`,
 * refused only because no route has that trailing slash: "Could not route to …"). Other names go to the server,
 * which names the ones it lacks.
 */
function settingName(name: string): void {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(name))
    throw new UserError(`Unrecognized zone setting name: ${name.slice(0, 100)}`, "`edgecli settings get <zone>` lists them.");
}
