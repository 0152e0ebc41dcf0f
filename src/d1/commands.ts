import { defineCommand, type AnyCommand, type CommandAlias, type OptionSpec } from "../core/cli/command.js";
import { lazy } from "../core/cli/lazy.js";

export { serveOptions } from "./config.js";

const envOption = { type: "string", describe: "Environment to use: [[d1_databases]] come from [env.<name>] of the config file" } as const;
const databasePositional = {
  name: "database",
  describe: "The database: a binding or database_name of [[d1_databases]] in the config, else a database name of the account",
  required: true,
} as const;
const localOptions = {
  local: { type: "boolean", describe: "Work on the local state directory's files directly, without a running server" },
  "persist-to": { type: "string", describe: "State directory for --local (default: $EDGE_STATE_DIR, else .edge, as `edgecli serve` uses)" },
} as const satisfies Record<string, OptionSpec>;

export const groups: Record<string, string> = {
  d1: "Manage D1 databases (SQLite), run SQL on them and apply migrations, remotely or on the local state (--local)",
  "d1 migrations": "Create, list and apply the migrations of a [[d1_databases]] entry (migrations_dir)",
};

export const commands: AnyCommand[] = [
  defineCommand({
    path: ["d1", "create"],
    describe: "Create a D1 database and print its [[d1_databases]] entry",
    positionals: [{ name: "name", describe: "The database name: 1-64 letters, digits, - and _", required: true }] as const,
    options: { env: envOption },
    examples: ["edgecli d1 create my-db"],
    handler: lazy(() => import("./cli/database.js"), "createDatabase"),
  }),
  defineCommand({
    path: ["d1", "list"],
    describe: "List the account's D1 databases",
    options: { json: { type: "boolean", describe: "Print JSON instead of a table" } },
    examples: ["edgecli d1 list", "edgecli d1 list --json"],
    handler: lazy(() => import("./cli/database.js"), "listDatabases"),
  }),
  defineCommand({
    path: ["d1", "info"],
    describe: "Show a D1 database: uuid, tables, file size",
    positionals: [databasePositional] as const,
    options: { env: envOption, json: { type: "boolean", describe: "Print JSON instead of a table" } },
    examples: ["edgecli d1 info my-db", "edgecli d1 info DB --json"],
    handler: lazy(() => import("./cli/database.js"), "databaseInfo"),
  }),
  defineCommand({
    path: ["d1", "delete"],
    describe: "Delete a D1 database and everything in it (asks first)",
    positionals: [databasePositional] as const,
    options: { env: envOption, "skip-confirmation": { type: "boolean", alias: "y", describe: "Do not ask (needed without a terminal)" } },
    examples: ["edgecli d1 delete my-db", "edgecli d1 delete my-db -y"],
    handler: lazy(() => import("./cli/database.js"), "deleteDatabase"),
  }),
  defineCommand({
    path: ["d1", "execute"],
    describe: "Run SQL on a D1 database, all statements in one transaction",
    positionals: [databasePositional] as const,
    options: {
      command: { type: "string", describe: "The SQL to run (one or more statements)" },
      file: { type: "string", describe: "A .sql file to run" },
      json: { type: "boolean", describe: "Print the results as JSON (the v4 query answer: one entry per statement)" },
      env: envOption,
      ...localOptions,
    },
    examples: [
      `edgecli d1 execute my-db --command "SELECT * FROM users"`,
      "edgecli d1 execute DB --file ./schema.sql",
      `edgecli d1 execute my-db --command "SELECT 1" --json --local`,
    ],
    handler: lazy(() => import("./cli/execute.js"), "execute"),
  }),
  defineCommand({
    path: ["d1", "export"],
    describe: "Export a D1 database as SQL (schema and data)",
    positionals: [databasePositional] as const,
    options: {
      output: { type: "string", describe: "The file to write (required)" },
      table: { type: "strings", describe: "Only this table (repeat for more)" },
      "no-schema": { type: "boolean", describe: "Only the data (INSERTs)" },
      "no-data": { type: "boolean", describe: "Only the schema (CREATEs)" },
      env: envOption,
      ...localOptions,
    },
    examples: ["edgecli d1 export my-db --output backup.sql", "edgecli d1 export my-db --output users.sql --table users --no-schema"],
    handler: lazy(() => import("./cli/execute.js"), "exportDatabase"),
  }),
  defineCommand({
    path: ["d1", "migrations", "create"],
    describe: "Create a new, empty migration file in the database's migrations_dir",
    positionals: [databasePositional, { name: "message", describe: "What the migration does (becomes its file name)", required: true }] as const,
    options: { env: envOption },
    examples: ["edgecli d1 migrations create DB create_users"],
    handler: lazy(() => import("./cli/migrations.js"), "createMigration"),
  }),
  defineCommand({
    path: ["d1", "migrations", "list"],
    describe: "List the migrations not yet applied to the database",
    positionals: [databasePositional] as const,
    options: { env: envOption, ...localOptions },
    examples: ["edgecli d1 migrations list DB", "edgecli d1 migrations list DB --local"],
    handler: lazy(() => import("./cli/migrations.js"), "listMigrations"),
  }),
  defineCommand({
    path: ["d1", "migrations", "apply"],
    describe: "Apply the pending migrations in order, each in one transaction with its record",
    positionals: [databasePositional] as const,
    options: { env: envOption, ...localOptions },
    examples: ["edgecli d1 migrations apply DB", "edgecli d1 migrations apply DB --local"],
    handler: lazy(() => import("./cli/migrations.js"), "applyMigrations"),
  }),
];

export const aliases: CommandAlias[] = [];
