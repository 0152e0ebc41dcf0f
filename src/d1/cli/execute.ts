import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { CliContext } from "../../core/cli/context.js";
import { UsageError, UserError } from "../../core/errors.js";
import { printTable } from "../../core/cli/table.js";
import { resolveDatabase, type TargetArgs } from "./target.js";

export interface ExecuteArgs extends TargetArgs {
  command?: string;
  file?: string;
  json?: boolean;
}

export async function execute(args: ExecuteArgs, ctx: CliContext): Promise<void> {
  if ((args.command === undefined) === (args.file === undefined)) throw new UsageError("Give exactly one of --command and --file");
  let sql = args.command;
  if (args.file !== undefined) {
    try {
      sql = await readFile(resolve(ctx.cwd, args.file), "utf8");
    } catch (err) {
      throw new UserError(`Could not read ${args.file}: ${(err as Error).message}`);
    }
  }
  const { database, backend } = await resolveDatabase(args, ctx);
  try {
    if (!args.json) ctx.log.info(`🌀 Executing on ${backend.where} database ${database.name} (${database.uuid}):`);
    const results = await backend.execute(sql!);
    if (args.json) return ctx.json(results);
    const duration = results.reduce((n, r) => n + (r.meta.duration ?? 0), 0);
    const read = results.reduce((n, r) => n + (r.meta.rows_read ?? 0), 0);
    const written = results.reduce((n, r) => n + (r.meta.rows_written ?? 0), 0);
    ctx.log.info(
      `🚣 Executed ${results.length} command${results.length === 1 ? "" : "s"} in ${duration.toFixed(2)}ms (${read} rows read, ${written} rows written)`,
    );
    for (const r of results) printTable(ctx, r.results);
  } finally {
    backend.close();
  }
}

export async function exportDatabase(
  args: TargetArgs & { output?: string; table?: string[]; "no-schema"?: boolean; "no-data"?: boolean },
  ctx: CliContext,
): Promise<void> {
  if (args["no-schema"] && args["no-data"]) throw new UsageError("--no-schema and --no-data together export nothing");
  const { database, backend } = await resolveDatabase(args, ctx);
  const out = resolve(ctx.cwd, args.output!);
  try {
    ctx.log.info(`🌀 Exporting ${backend.where} database ${database.name} (${database.uuid})`);
    await backend.exportTo(out, { noSchema: args["no-schema"], noData: args["no-data"], tables: args.table ?? [] });
    ctx.log.info(`🌀 Exported to ${out} successfully!`);
  } finally {
    backend.close();
  }
}
