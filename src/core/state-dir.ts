import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { UserError } from "./errors.js";

/** The state directory: an explicit flag, then EDGE_STATE_DIR, then `.edge/` under the working directory. */
export function resolveStateDir(flag?: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  return resolve(cwd, flag ?? env.EDGE_STATE_DIR ?? ".edge");
}

/**
 * The state directory a `--local` command works on, which must already exist: a command run in the wrong directory
 * (or before the first `edgecli serve`) then says so instead of quietly creating an empty `.edge` there.
 */
export function existingStateDir(flag: string | undefined, env: NodeJS.ProcessEnv, cwd: string): string {
  const dir = resolveStateDir(flag, env, cwd);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
    const from = flag !== undefined ? "--persist-to" : env.EDGE_STATE_DIR !== undefined ? "EDGE_STATE_DIR" : "the default, ./.edge";
    throw new UserError(
      `--local: there is no state directory at ${dir} (from ${from}); nothing was created.\n` +
        "Run this where `edgecli serve` keeps its state, set EDGE_STATE_DIR or pass --persist-to <dir> (an existing directory; `edgecli serve --state-dir <dir>` creates one).",
    );
  }
  return dir;
}

/**
 * The account that owns what a `--local` command first writes in a state directory: EDGE_ACCOUNT_ID, the config's
 * account_id, else the account `edgecli serve` bootstrapped there (credentials.json), so the server then shows it.
 */
export function localAccountId(stateDir: string, env: NodeJS.ProcessEnv, configured?: string): string {
  if (env.EDGE_ACCOUNT_ID) return env.EDGE_ACCOUNT_ID;
  if (configured) return configured;
  const file = join(stateDir, "credentials.json");
  if (existsSync(file)) {
    try {
      const id = (JSON.parse(readFileSync(file, "utf8")) as { account_id?: string }).account_id;
      if (id) return id;
    } catch {
      // an unreadable credentials file only means we fall back below
    }
  }
  return "local";
}
