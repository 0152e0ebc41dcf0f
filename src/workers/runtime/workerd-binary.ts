import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { promisify } from "node:util";
import { UserError } from "../../core/errors.js";

/** The workerd that runs scripts, and the newest compatibility date it implements. */
export interface WorkerdBinary {
  path: string;
  /** workerd refuses a script whose compatibility date is later than its own release date. */
  newestCompatibilityDate: string;
}

/**
 * The binary of the npm package `workerd`, pinned in package.json (see docs/workers.md for why that version):
 * `--workerd-binary` runs another one.
 */
export function defaultWorkerdPath(): string {
  return createRequire(import.meta.url).resolve("workerd/bin/workerd");
}

/** Runs `<path> --version` ("workerd 2026-10-12"); its date is the newest compatibility date it supports. */
export async function probeWorkerd(path: string): Promise<WorkerdBinary> {
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(path, ["--version"], { timeout: 30_000 }));
  } catch (err) {
    throw new UserError(`Could not run workerd at ${path} (see --workerd-binary): ${(err as Error).message.split("\n")[0]}`);
  }
  const date = /\b(\d{4}-\d{2}-\d{2})\b/.exec(stdout)?.[1];
  if (!date) throw new UserError(`${path} (--workerd-binary) does not look like workerd: \`--version\` printed "${stdout.trim().slice(0, 100)}"`);
  return { path, newestCompatibilityDate: date };
}

/** The date a script runs with: the one it asks for, or the runtime's newest when it asks for a later one. */
export function effectiveCompatibilityDate(requested: string, binary: WorkerdBinary): string {
  return requested > binary.newestCompatibilityDate ? binary.newestCompatibilityDate : requested;
}
