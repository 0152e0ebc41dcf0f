import type { CliContext } from "../../core/cli/context.js";
import { UsageError } from "../../core/errors.js";
import { findZone } from "./zone.js";

/** `edgecli dns record list <zone> [--type] [--name]`: every page, as JSON. */
export async function listRecords(args: { zone?: string; type?: string; name?: string }, ctx: CliContext): Promise<void> {
  const z = await findZone(args.zone!, ctx);
  ctx.json(await ctx.api().fetchAllPages(`/zones/${z.id}/dns_records`, { type: args.type, name: args.name }, 1000));
}

interface CreateArgs {
  zone?: string;
  type?: string;
  name?: string;
  content?: string;
  data?: string;
  ttl?: number;
  priority?: number;
  proxied?: boolean;
  comment?: string;
}

/** `edgecli dns record create <zone> --type --name (--content | --data) ...`: prints the record as JSON. */
export async function createRecord(a: CreateArgs, ctx: CliContext): Promise<void> {
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
  const z = await findZone(a.zone!, ctx);
  const body = { type: a.type, name: a.name, content: a.content, data, ttl: a.ttl, priority: a.priority, proxied: a.proxied, comment: a.comment };
  ctx.json(await ctx.api().fetchResult("POST", `/zones/${z.id}/dns_records`, { json: body }));
}

/** `edgecli dns record delete <zone> <id>` */
export async function deleteRecord(args: { zone?: string; id?: string }, ctx: CliContext): Promise<void> {
  const z = await findZone(args.zone!, ctx);
  await ctx.api().fetchResult("DELETE", `/zones/${z.id}/dns_records/${encodeURIComponent(args.id!)}`);
  ctx.log.info(`Deleted record ${args.id} from ${z.name}.`);
}
