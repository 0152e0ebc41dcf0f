import type { CliContext } from "../../core/cli/context.js";
import type { D1DatabaseRecord } from "../store.js";
import { databasesPath } from "./remote-backend.js";
import { printTable } from "../../core/cli/table.js";
import { resolveDatabase } from "./target.js";

export async function createDatabase(args: { name?: string; env?: string }, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId(args.env);
  const db = await ctx.api().fetchResult<D1DatabaseRecord>("POST", databasesPath(account), { json: { name: args.name } });
  ctx.log.info(`✅ Successfully created DB '${db.name}'`);
  ctx.log.info("Add the following to your configuration file in your d1_databases array:");
  ctx.log.info(`[[d1_databases]]\nbinding = "DB"\ndatabase_name = "${db.name}"\ndatabase_id = "${db.uuid}"`);
}

export async function listDatabases(args: { json?: boolean }, ctx: CliContext): Promise<void> {
  const account = await ctx.accountId();
  const all = await ctx.api().fetchAllPages<D1DatabaseRecord & { file_size?: number }>(databasesPath(account), {}, 1000);
  if (args.json) return ctx.json(all);
  printTable(
    ctx,
    all.map((d) => ({ uuid: d.uuid, name: d.name, created_at: d.created_at, file_size: d.file_size ?? 0 })),
  );
}

export async function databaseInfo(args: { database?: string; env?: string; json?: boolean }, ctx: CliContext): Promise<void> {
  const { database } = await resolveDatabase(args, ctx);
  const account = await ctx.accountId(args.env);
  const info = await ctx.api().fetchResult<Record<string, unknown>>("GET", `${databasesPath(account)}/${encodeURIComponent(database.uuid)}`);
  if (args.json) return ctx.json(info);
  printTable(
    ctx,
    Object.entries(info).map(([k, v]) => ({ "": k, [database.name]: String(v) })),
  );
}

export async function deleteDatabase(args: { database?: string; env?: string; "skip-confirmation"?: boolean }, ctx: CliContext): Promise<number> {
  const { database } = await resolveDatabase(args, ctx);
  const account = await ctx.accountId(args.env);
  const question = `About to delete DB '${database.name}' (${database.uuid}) and everything in it. Ok to proceed?`;
  if (!(await ctx.confirmDestructive(question, { given: args["skip-confirmation"], flag: "--skip-confirmation (-y)" }))) {
    ctx.log.info("Not deleting.");
    return 0;
  }
  await ctx.api().fetchResult("DELETE", `${databasesPath(account)}/${encodeURIComponent(database.uuid)}`);
  ctx.log.info(`✅ Deleted DB '${database.name}'`);
  return 0;
}
