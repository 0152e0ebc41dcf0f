import type { CliContext } from "./context.js";
import type { ProjectConfig } from "./config-file.js";

/** A binding of a Worker's upload as the scripts API takes it (the shape wrangler 3 sends: `type`, `name`, its fields). */
export interface UploadBinding {
  type: string;
  name: string;
  [field: string]: unknown;
}

/**
 * A section of a wrangler config that another area than workers reads when `edgecli deploy` runs (Queues:
 * `[[queues.producers]]`, `[[queues.consumers]]`). Deploy (workers/cli/deploy.ts) hands it the section's value as
 * the environment sees it (its own, else the top level's), so the area knows nothing of Workers' CLI, and Workers
 * nothing of the area's.
 */
export interface DeploySection {
  /** The bindings the section adds to the upload. Throws a UserError for a bad section, before anything is uploaded. */
  bindings(section: unknown, cfg: ProjectConfig): UploadBinding[];
  /** Checks what `apply` will do, before anything is uploaded. */
  check(section: unknown, cfg: ProjectConfig, script: string): void;
  /** After the upload: what the section sets up for `script` elsewhere; returns the lines deploy prints. */
  apply(ctx: CliContext, section: unknown, cfg: ProjectConfig, accountId: string, script: string): Promise<string[]>;
}

/** What an area declares in its commands.ts (`deploySections`): the config key, and its section, loaded when deploy runs. */
export interface DeploySectionEntry {
  key: string;
  load(): Promise<DeploySection>;
}

const registered: DeploySectionEntry[] = [];

/** Called once by src/commands.ts with every area's entries. */
export function registerDeploySections(entries: readonly DeploySectionEntry[]): void {
  registered.push(...entries);
}

/** The registered sections, loaded, with their keys, in the order the areas are listed. */
export async function loadDeploySections(): Promise<{ key: string; section: DeploySection }[]> {
  return Promise.all(registered.map(async (e) => ({ key: e.key, section: await e.load() })));
}
