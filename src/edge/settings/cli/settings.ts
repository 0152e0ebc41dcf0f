import type { CliContext } from "../../../core/cli/context.js";
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
  const id = await zoneIdOf(args.zone!, ctx);
  const raw = args.value!;
  const value = /^\d{1,9}$/.test(raw) ? Number(raw) : raw;
  const s = await ctx.api().fetchResult<Setting>("PATCH", `/zones/${id}/settings/${encodeURIComponent(args.setting!)}`, { json: { value } });
  ctx.log.info(`Set ${s.id} of ${args.zone} to ${s.value}.`);
}
