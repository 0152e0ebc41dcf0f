import { ApiRequestError } from "../../core/cli/api-client.js";
import type { CliContext } from "../../core/cli/context.js";
import type { ProjectConfig } from "../../core/cli/config-file.js";
import { UserError } from "../../core/errors.js";
import { effectiveKeys } from "../cli/config-sections.js";
import type { DurableObjectNamespaceBinding } from "./namespace-binding.js";

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The config's `[[durable_objects.bindings]]` as upload bindings (the shape wrangler 3 sends). */
export function durableObjectBindings(cfg: ProjectConfig): DurableObjectNamespaceBinding[] {
  const section = effectiveKeys(cfg).get("durable_objects")?.value;
  if (section === undefined) return [];
  if (!isTable(section) || Object.keys(section).some((k) => k !== "bindings") || (section.bindings !== undefined && !Array.isArray(section.bindings))) {
    throw new UserError(`${cfg.path}: "durable_objects" must be a table with one key, bindings (a list of { name, class_name, script_name })`);
  }
  return ((section.bindings ?? []) as unknown[]).map((b, i) => {
    if (!isTable(b) || typeof b.name !== "string" || typeof b.class_name !== "string") {
      throw new UserError(`${cfg.path}: durable_objects.bindings[${i}] needs a "name" and a "class_name" (strings)`);
    }
    const extra = Object.keys(b).find((k) => !["name", "class_name", "script_name", "environment"].includes(k));
    if (extra) throw new UserError(`${cfg.path}: durable_objects.bindings[${i}]: "${extra}" is not a key of a Durable Object binding`);
    return {
      type: "durable_object_namespace",
      name: b.name,
      class_name: b.class_name,
      ...(typeof b.script_name === "string" && { script_name: b.script_name }),
      ...(typeof b.environment === "string" && { environment: b.environment }),
    };
  });
}

/** The config's `[[migrations]]`, each with its tag; the steps are checked by the API. */
function configMigrations(cfg: ProjectConfig): (Record<string, unknown> & { tag: string })[] {
  const list = effectiveKeys(cfg).get("migrations")?.value;
  if (list === undefined) return [];
  if (!Array.isArray(list) || list.some((m) => !isTable(m) || typeof m.tag !== "string")) {
    throw new UserError(`${cfg.path}: "migrations" must be a list of tables, each with a "tag" (e.g. [[migrations]] tag = "v1")`);
  }
  return list as (Record<string, unknown> & { tag: string })[];
}

/**
 * The upload metadata's `migrations`, as wrangler 3 builds it: the Worker's current tag (from the API) as `old_tag`,
 * the config's last tag as `new_tag`, and the steps after the current one (all of them when the Worker has none, or
 * when its tag is not in the config). Undefined when there is nothing to apply.
 */
export async function migrationsToUpload(ctx: CliContext, cfg: ProjectConfig, accountId: string, name: string): Promise<Record<string, unknown> | undefined> {
  const migrations = configMigrations(cfg);
  if (migrations.length === 0) return undefined;
  let current: string | undefined;
  try {
    const service = await ctx
      .api()
      .fetchEnvelope<{ default_environment: { script: { migration_tag?: string } } }>(
        "GET",
        `/accounts/${accountId}/workers/services/${encodeURIComponent(name)}`,
      );
    current = service.result.default_environment.script.migration_tag;
  } catch (e) {
    if (!(e instanceof ApiRequestError && e.status === 404)) throw e;
  }
  const steps = (list: typeof migrations) => list.map(({ tag: _tag, ...step }) => step);
  const newTag = migrations[migrations.length - 1].tag;
  if (current === undefined) return { new_tag: newTag, steps: steps(migrations) };
  const at = migrations.findIndex((m) => m.tag === current);
  if (at === -1) {
    ctx.log.warn(`The Worker's migration tag "${current}" is not in ${cfg.path}; sending all of its migrations`);
    return { old_tag: current, new_tag: newTag, steps: steps(migrations) };
  }
  if (at === migrations.length - 1) return undefined;
  return { old_tag: current, new_tag: newTag, steps: steps(migrations.slice(at + 1)) };
}
