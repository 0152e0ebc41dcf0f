import { resolve } from "node:path";

/** The state directory: an explicit flag, then EDGE_STATE_DIR, then `.edge/` under the working directory. */
export function resolveStateDir(flag?: string, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): string {
  return resolve(cwd, flag ?? env.EDGE_STATE_DIR ?? ".edge");
}
