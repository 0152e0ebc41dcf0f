import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { OptionValues } from "../cli/command.js";
import type { CliContext } from "../cli/context.js";
import { parseDatabaseUrl, parseObjectStoreUrl } from "../config.js";
import { UsageError, UserError } from "../errors.js";
import { SECRETS_KEY_ENV, SECRETS_KEY_FILE, SecretBox } from "../secret-box.js";
import { openDatabase } from "../db/sqlite.js";
import type { AreaCopier, NodeOnlyState } from "./area.js";
import type { copyOptions } from "./commands.js";
import { copyState, countMismatches, type TableCount } from "./copy.js";
import { databaseSide, stateDirSide, type CopySide } from "./sides.js";

type Args = OptionValues<typeof copyOptions>;

/** Progress lines (without a terminal) come at most this often, and at the end of each table. */
const LINE_EVERY_MS = 2_000;

/** `edgecli state copy`: checks the direction and the secrets key, copies, prints the count check. */
export async function stateCopy(args: Args, ctx: CliContext, copiers: readonly AreaCopier[], nodeOnly: readonly NodeOnlyState[] = []): Promise<number> {
  const toDatabase = Boolean(args["from-state-dir"] || args["to-database-url"] || args["to-object-store-url"]);
  const fromDatabase = Boolean(args["from-database-url"] || args["from-object-store-url"] || args["to-state-dir"]);
  if (toDatabase === fromDatabase) {
    throw new UsageError(
      "Give one direction: --from-state-dir DIR --to-database-url URL --to-object-store-url URL, or --from-database-url URL --from-object-store-url URL --to-state-dir DIR",
    );
  }
  const need = (name: keyof Args) => {
    const v = args[name];
    if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required for this direction (see edgecli state copy --help)`);
    return v;
  };
  let from: CopySide;
  let to: CopySide;
  if (toDatabase) {
    const [url, store] = [parseDatabaseUrl(need("to-database-url")), parseObjectStoreUrl(need("to-object-store-url"))];
    const stateDir = resolve(ctx.cwd, need("from-state-dir"));
    if (!existsSync(join(stateDir, "db"))) throw new UserError(`${stateDir} is not a state directory of the platform (it has no db/ folder)`);
    checkKeyCarried(stateDir, ctx.env);
    const behind = leftBehind(stateDir, nodeOnly);
    if (behind.length > 0 && !args["leave-behind"]) {
      throw new UserError(
        `${stateDir} holds what the platform keeps on one machine only, which a copy into PostgreSQL cannot carry: ${behind.join("; ")}. Remove them first, or copy the rest with --leave-behind (they then stay in this state directory only).`,
      );
    }
    if (behind.length > 0) ctx.log.warn(`Left behind in ${stateDir} (--leave-behind): ${behind.join("; ")}.`);
    from = stateDirSide(stateDir);
    to = await databaseSide(url, store);
  } else {
    const [url, store] = [parseDatabaseUrl(need("from-database-url")), parseObjectStoreUrl(need("from-object-store-url"))];
    const stateDir = resolve(ctx.cwd, need("to-state-dir"));
    const key = keyForStateDir(stateDir, ctx.env);
    from = await databaseSide(url, store);
    to = stateDirSide(stateDir);
    // Written only once the source answered: a refused copy leaves no state directory behind.
    to = withKeyFile(to, stateDir, key);
  }
  try {
    const counts = await copyWithProgress(ctx, copiers, from, to, Boolean(args["into-non-empty"]));
    ctx.log.info(countTable(counts));
    const mismatches = countMismatches(counts);
    if (mismatches.length > 0) {
      ctx.log.error(`Count check failed:\n${mismatches.join("\n")}`);
      return 1;
    }
    ctx.log.info(`Count check: every table of ${[...new Set(counts.map((c) => c.area))].join(", ")} holds what the source holds.`);
    if (toDatabase) ctx.log.info(`Start every node with the same ${SECRETS_KEY_ENV}, --database-url and --object-store-url.`);
    return 0;
  } finally {
    await Promise.all([from.close(), to.close()]);
  }
}

/** Sealed worker secrets are carried as they are: the nodes must open them with the key the state directory used. */
function checkKeyCarried(stateDir: string, env: NodeJS.ProcessEnv) {
  const file = join(stateDir, SECRETS_KEY_FILE);
  if (!existsSync(file)) return;
  const own = readFileSync(file, "utf8").trim();
  if (!env[SECRETS_KEY_ENV]) {
    throw new UserError(
      `Worker secrets in ${stateDir} are sealed with ${file}; they are copied sealed, so every node must use that key. Set ${SECRETS_KEY_ENV} to the content of that file (here and on every node) and run this again.`,
    );
  }
  if (Buffer.from(env[SECRETS_KEY_ENV], "base64").toString("base64") !== Buffer.from(own, "base64").toString("base64")) {
    throw new UserError(`${SECRETS_KEY_ENV} is not the key in ${file}, which sealed the worker secrets of ${stateDir}: set it to that file's content.`);
  }
}

/** The key a state directory made from the database must keep: the nodes' EDGE_SECRETS_KEY. */
function keyForStateDir(stateDir: string, env: NodeJS.ProcessEnv): string {
  const key = env[SECRETS_KEY_ENV];
  if (!key) {
    throw new UserError(
      `Set ${SECRETS_KEY_ENV} to the key the nodes use: worker secrets are copied sealed with it, and the state directory keeps it in ${SECRETS_KEY_FILE}.`,
    );
  }
  SecretBox.fromKey(Buffer.from(key, "base64"), SECRETS_KEY_ENV);
  const file = join(stateDir, SECRETS_KEY_FILE);
  if (existsSync(file) && readFileSync(file, "utf8").trim() !== key.trim()) {
    throw new UserError(`${file} holds another key than ${SECRETS_KEY_ENV}; the copied worker secrets would not open. Copy into a new state directory.`);
  }
  return key.trim();
}

/** The state directory side, writing the secrets key file when the copy starts. */
function withKeyFile(side: CopySide, stateDir: string, key: string): CopySide {
  let written = false;
  return {
    ...side,
    open(area, role) {
      if (!written) {
        written = true;
        mkdirSync(join(stateDir, "keys"), { recursive: true, mode: 0o700 });
        writeFileSync(join(stateDir, SECRETS_KEY_FILE), key + "\n", { mode: 0o600 });
      }
      return side.open(area, role);
    },
  };
}

async function copyWithProgress(ctx: CliContext, copiers: readonly AreaCopier[], from: CopySide, to: CopySide, intoNonEmpty: boolean) {
  const stderr = ctx.io.stderr;
  let bar: Awaited<ReturnType<CliContext["progress"]>> | undefined;
  let lastLine = 0;
  let total = 0;
  try {
    return await copyState(copiers, from, to, {
      intoNonEmpty,
      onStart: async (rows) => {
        total = rows;
        ctx.log.info(`Copying ${rows} rows from ${from.where}\n  into ${to.where}`);
        if (stderr.isTTY) bar = await ctx.progress(rows, "Copying rows");
      },
      onRows: (area, table, doneInTable, tableRows, done) => {
        if (bar) return bar.update(done);
        if (doneInTable < tableRows && Date.now() - lastLine < LINE_EVERY_MS) return;
        lastLine = Date.now();
        stderr.write(`${area} ${table}: ${doneInTable}/${tableRows} rows (${done}/${total} in all)\n`);
      },
    });
  } finally {
    bar?.stop();
  }
}

/** One line per table: rows in the source, in the target before and after, copied, left because they were there. */
function countTable(counts: readonly TableCount[]): string {
  const head = ["area", "table", "source", "target before", "target after", "copied", "already there"];
  const rows = counts.map((c) => [c.area, c.table, c.source, c.before, c.after, c.copied, c.present].map(String));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => "  " + cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), ...rows.map(line)].join("\n");
}

/** What of `nodeOnly` the state directory holds, as "3 D1 databases" (read-only; a missing file holds nothing). */
function leftBehind(stateDir: string, nodeOnly: readonly NodeOnlyState[]): string[] {
  const out: string[] = [];
  for (const s of nodeOnly) {
    const file = join(stateDir, "db", `${s.database}.sqlite`);
    if (!existsSync(file)) continue;
    const db = openDatabase(file, [], { readonly: true });
    try {
      const n = Number((db.prepare(s.count).get() as { n: number }).n);
      if (n > 0) out.push(`${n} ${s.what}`);
    } catch (err) {
      // A file no platform has opened since its table was added holds none of them.
      if (!/no such table/.test((err as Error).message)) throw err;
    } finally {
      db.close();
    }
  }
  return out;
}
