import type { CliContext } from "../../../core/cli/context.js";
import { UserError } from "../../../core/errors.js";
import { zoneIdOf } from "../../zone-arg.js";

interface PurgeArgs {
  zone?: string;
  file?: string[];
  tag?: string[];
  host?: string[];
  prefix?: string[];
  everything?: boolean;
}

/** What the API's purge kinds are called in the CLI's answer (`files` are URLs). */
const NOUNS: Record<string, [string, string]> = { files: ["URL", "URLs"], tags: ["tag", "tags"], hosts: ["host", "hosts"], prefixes: ["prefix", "prefixes"] };

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
  const id = await zoneIdOf(args.zone!, ctx);
  await ctx.api().fetchResult("POST", `/zones/${id}/purge_cache`, { json: Object.fromEntries(kinds) });
  const [kind, value] = kinds[0];
  if (kind === "purge_everything") return ctx.log.info(`Purged everything cached for ${args.zone}.`);
  const n = (value as string[]).length;
  const [one, many] = NOUNS[kind];
  ctx.log.info(`Purged ${n} ${n === 1 ? one : many} of ${args.zone}.`);
}
