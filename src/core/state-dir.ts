import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** The state directory: an explicit flag, then EDGE_STATE_DIR, then `.edge/` under the working directory. */
export function resolveStateDir(flag?: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  return resolve(cwd, flag ?? env.EDGE_STATE_DIR ?? ".edge");
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
