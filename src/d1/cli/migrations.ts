import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { CliContext } from "../../core/cli/context.js";
import { UserError } from "../../core/errors.js";
import type { D1CliBackend } from "./backend.js";
import { printTable } from "../../core/cli/table.js";
import { resolveDatabase, type D1Target, type TargetArgs } from "./target.js";

/**
 * wrangler's D1 migrations: `<migrations_dir>/NNNN_<message>.sql` files (migrations_dir defaults to "migrations",
 * beside the config file), applied in order, each recorded in the database's own table (migrations_table,
 * default d1_migrations) in the same transaction as its SQL, so a migration is applied whole or not at all.
 */

const DEFAULT_DIR = "migrations";
const DEFAULT_TABLE = "d1_migrations";

function migrationsDir(target: D1Target, ctx: CliContext): string {
  const base = target.configPath ? dirname(target.configPath) : ctx.cwd;
  return resolve(base, target.config?.migrations_dir ?? DEFAULT_DIR);
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;
const tableOf = (target: D1Target) => quoted(target.config?.migrations_table ?? DEFAULT_TABLE);

/** The migration files of a directory, in order. */
function migrationFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort();
}

async function appliedMigrations(backend: D1CliBackend, table: string): Promise<Set<string>> {
  const results = await backend.execute(
    `CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL); SELECT name FROM ${table} ORDER BY id`,
  );
  return new Set(results.at(-1)!.results.map((r) => String(r.name)));
}

export async function createMigration(args: TargetArgs & { message?: string }, ctx: CliContext): Promise<void> {
  const cfg = await ctx.config(args.env);
  const entry = cfg?.d1_databases.find((d) => d.binding === args.database || d.database_name === args.database);
  if (!entry) throw new UserError(`No [[d1_databases]] entry with binding or database_name "${args.database}" in ${cfg?.path ?? "a config file (none found)"}`);
  const dir = resolve(dirname(cfg!.path), entry.migrations_dir ?? DEFAULT_DIR);
  mkdirSync(dir, { recursive: true });
  const last = migrationFiles(dir)
    .map((f) => Number(f.split("_")[0]))
    .filter((n) => Number.isInteger(n))
    .reduce((a, b) => Math.max(a, b), 0);
  const slug =
    args
      .message!.trim()
      .replace(/[^A-Za-z0-9]+/g, "_")
      .replace(/^_|_$/g, "") || "migration";
  const file = join(dir, `${String(last + 1).padStart(4, "0")}_${slug}.sql`);
  writeFileSync(file, `-- Migration number: ${String(last + 1).padStart(4, "0")} \t ${new Date().toISOString()}\n`, { flag: "wx" });
  ctx.log.info(`✅ Successfully created Migration '${file.slice(dir.length + 1)}'!`);
  ctx.log.info(`The migration is available for editing here\n${file}`);
}

export async function listMigrations(args: TargetArgs, ctx: CliContext): Promise<void> {
  const target = await resolveDatabase(args, ctx);
  try {
    const applied = await appliedMigrations(target.backend, tableOf(target));
    const pending = migrationFiles(migrationsDir(target, ctx)).filter((f) => !applied.has(f));
    if (pending.length === 0) return ctx.log.info("✅ No migrations to apply!");
    ctx.log.info(`Migrations to be applied:`);
    printTable(
      ctx,
      pending.map((name) => ({ Name: name })),
    );
  } finally {
    target.backend.close();
  }
}

export async function applyMigrations(args: TargetArgs, ctx: CliContext): Promise<void> {
  const target = await resolveDatabase(args, ctx);
  try {
    const dir = migrationsDir(target, ctx);
    const table = tableOf(target);
    const applied = await appliedMigrations(target.backend, table);
    const pending = migrationFiles(dir).filter((f) => !applied.has(f));
    if (pending.length === 0) return ctx.log.info("✅ No migrations to apply!");
    ctx.log.info(`Migrations to be applied: ${pending.join(", ")}`);
    for (const name of pending) {
      const sql = readFileSync(join(dir, name), "utf8");
      // The record is written in the same request as the SQL: one transaction, so both or neither.
      try {
        await target.backend.execute(`${sql}\n;\nINSERT INTO ${table} (name) VALUES ('${name.replaceAll("'", "''")}');`);
      } catch (err) {
        throw new UserError(`Migration ${name} failed, so it and the ones after it were not applied: ${(err as Error).message}`);
      }
      ctx.log.info(`✅ ${name}`);
    }
    ctx.log.info(`🚣 Applied ${pending.length} migration${pending.length === 1 ? "" : "s"} to the ${target.backend.where} database ${target.database.name}`);
  } finally {
    target.backend.close();
  }
}
