import type { CliContext } from "../../../core/cli/context.js";
import { UserError } from "../../../core/errors.js";

interface PurgeArgs {
  zone?: string;
  file?: string[];
  tag?: string[];
  host?: string[];
  prefix?: string[];
  everything?: boolean;
}

/** A zone named by id or by domain name. */
async function zoneId(zone: string, ctx: CliContext): Promise<string> {
  if (/^[0-9a-f]{32}$/.test(zone)) return zone;
  const found = await ctx.api().fetchResult<{ id: string }[]>("GET", "/zones", { query: { name: zone.toLowerCase().replace(/\.$/, "") } });
  if (found.length === 0) throw new UserError(`There is no zone ${zone} in the accounts this token can read`, "See `edgecli dns zone list`.");
  return found[0].id;
}

/** `edgecli cache purge <zone> (--file … | --tag … | --host … | --prefix … | --everything)` */
export async function purge(args: PurgeArgs, ctx: CliContext): Promise<void> {
  const split = (v: string[] | undefined) =>
    (v ?? [])
      .flatMap((s) => s.split(","))
      .map((s) => s.trim())
      .filter(Boolean);
  const kinds: [string, unknown][] = [
    ["files", split(args.file)],
    ["tags", split(args.tag)],
    ["hosts", split(args.host)],
    ["prefixes", split(args.prefix)],
  ].filter(([, v]) => (v as string[]).length > 0) as [string, unknown][];
  if (args.everything) kinds.push(["purge_everything", true]);
  if (kinds.length !== 1) throw new UserError("Name what to purge with exactly one of --file, --tag, --host, --prefix or --everything");
  const id = await zoneId(args.zone!, ctx);
  await ctx.api().fetchResult("POST", `/zones/${id}/purge_cache`, { json: Object.fromEntries(kinds) });
  const [kind, value] = kinds[0];
  ctx.log.info(kind === "purge_everything" ? `Purged everything cached for ${args.zone}.` : `Purged ${(value as string[]).length} ${kind} of ${args.zone}.`);
}
