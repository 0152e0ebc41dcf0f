import type { CliContext } from "../../core/cli/context.js";
import type { D1DatabaseConfig } from "../../core/cli/config-file.js";
import { UserError } from "../../core/errors.js";
import { existingStateDir, localAccountId } from "../../core/state-dir.js";
import type { D1DatabaseRecord } from "../store.js";
import type { D1CliBackend } from "./backend.js";
import { LocalD1Backend, openLocalD1Store } from "./local-backend.js";
import { databasesPath, RemoteD1Backend } from "./remote-backend.js";

export interface TargetArgs {
  database?: string;
  env?: string;
  local?: boolean;
  "persist-to"?: string;
}

export interface D1Target {
  database: D1DatabaseRecord;
  /** The `[[d1_databases]]` entry that named it, if one did. */
  config?: D1DatabaseConfig;
  /** Where the config file is (migrations_dir is relative to it). */
  configPath?: string;
  backend: D1CliBackend;
}

/**
 * The database a command names, as wrangler finds it: a `[[d1_databases]]` entry whose `binding` or
 * `database_name` is the argument (its `database_id` is the database), else the account's database of that name.
 * With --local, the state directory's registry is used, and a config entry's database_id it does not know yet is
 * recorded there (wrangler's local mode also makes a database on first use).
 */
export async function resolveDatabase(args: TargetArgs, ctx: CliContext): Promise<D1Target> {
  const arg = args.database!;
  const cfg = await ctx.config(args.env);
  const entry = cfg?.d1_databases.find((d) => d.binding === arg || d.database_name === arg);
  const name = entry?.database_name ?? arg;
  if (args.local) {
    const dir = existingStateDir(args["persist-to"], ctx.env, ctx.cwd);
    const account = localAccountId(dir, ctx.env, cfg?.account_id);
    const { store, close } = openLocalD1Store(dir);
    try {
      let database: D1DatabaseRecord | undefined;
      if (entry?.database_id) database = await store.adoptDatabase(account, entry.database_id, name);
      else database = (await store.listDatabases(account, { name })).databases[0] ?? (await store.createDatabase(account, name));
      return { database, config: entry, configPath: cfg?.path, backend: new LocalD1Backend(dir, database) };
    } catch (err) {
      throw err instanceof UserError ? err : new UserError(`--local: ${(err as Error).message}`);
    } finally {
      close();
    }
  }
  const account = await ctx.accountId(args.env);
  let database: D1DatabaseRecord | undefined;
  if (entry?.database_id) {
    database = await ctx.api().fetchResult<D1DatabaseRecord>("GET", `${databasesPath(account)}/${encodeURIComponent(entry.database_id)}`);
  } else {
    const found = await ctx.api().fetchResult<D1DatabaseRecord[]>("GET", databasesPath(account), { query: { name } });
    database = found[0];
  }
  if (!database)
    throw new UserError(`Couldn't find DB with name '${arg}' (neither a binding nor a database_name in the config, nor a database of the account)`);
  return { database, config: entry, configPath: cfg?.path, backend: new RemoteD1Backend(ctx, account, database.uuid) };
}
