import { readFileSync } from "node:fs";
import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import { findZone } from "./zone.js";

/** `edgecli dns export <zone>`: the zone as a BIND zone file on stdout. */
export async function exportZone(args: { zone?: string }, ctx: CliContext): Promise<void> {
  const z = await findZone(args.zone!, ctx);
  const res = await ctx.api().raw("GET", `/zones/${z.id}/dns_records/export`);
  const text = await res.body.text();
  if (res.status !== 200) throw new UserError(`Export of ${z.name} failed (HTTP ${res.status}): ${text.slice(0, 300)}`);
  ctx.write(text);
}

/** `edgecli dns import <zone> <file|-> [--proxied]`: adds the records of a BIND zone file. */
export async function importZone(args: { zone?: string; file?: string; proxied?: boolean }, ctx: CliContext): Promise<void> {
  const file = args.file!;
  let text: string;
  try {
    text = file === "-" ? (await ctx.readStdin()).toString("utf8") : readFileSync(file, "utf8");
  } catch (e) {
    throw new UserError(`Cannot read ${file}: ${(e as Error).message}`);
  }
  const z = await findZone(args.zone!, ctx);
  // The API client sends through undici's request(), which takes undici's own FormData class.
  const { FormData } = await import("undici");
  const form = new FormData();
  form.set("file", new Blob([text]), "zone.txt");
  form.set("proxied", String(!!args.proxied));
  const r = await ctx.api().fetchResult<{ recs_added: number; total_records_parsed: number }>("POST", `/zones/${z.id}/dns_records/import`, {
    body: form as unknown as globalThis.FormData,
  });
  ctx.log.info(`Imported ${r.recs_added} of ${r.total_records_parsed} records into ${z.name} (records already there are skipped).`);
}
