import type { ProjectConfig } from "../../core/cli/config-file.js";
import { UserError } from "../../core/errors.js";

/**
 * What `edgecli deploy` does with each key of a wrangler 3 config (wrangler 3.114's `src/config/environment.ts`
 * and `config.ts`): a key is read and acted on, or has nothing to change on this platform, or is refused before
 * anything is uploaded. Nothing is ignored in silence: a key this table does not know is refused too, since it
 * may change what runs.
 */
type Treatment =
  /** Read by deploy (bindings, bundling, triggers) or by every command (name, account). */
  | { kind: "read" }
  /** Accepted: it changes nothing that runs here (wrangler's own dev-server settings, billing models…). */
  | { kind: "no-effect" }
  /** Refused unless `allowed(value)` (e.g. an empty list, a feature turned off); `what` names the feature. */
  | { kind: "refused"; what: string; allowed?: (value: unknown) => boolean };

const read: Treatment = { kind: "read" };
const noEffect: Treatment = { kind: "no-effect" };
const refused = (what: string, allowed: (value: unknown) => boolean = isEmpty): Treatment => ({ kind: "refused", what, allowed });

/** Nothing in it: absent, false, an empty list, or a table whose values are all empty. */
function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null || value === false) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object") return Object.values(value).every(isEmpty);
  return false;
}

export const CONFIG_KEYS: ReadonlyMap<string, Treatment> = new Map<string, Treatment>([
  // What deploy reads.
  ["name", read],
  ["main", read],
  ["account_id", read],
  ["compatibility_date", read],
  ["compatibility_flags", read],
  ["vars", read],
  ["kv_namespaces", read],
  ["r2_buckets", read],
  ["d1_databases", read],
  ["triggers", read],
  ["durable_objects", read],
  ["migrations", read],
  ["queues", read],
  ["services", read],
  ["assets", read],
  ["build", read],
  ["define", read],
  ["alias", read],
  ["minify", read],
  ["jsx_factory", read],
  ["jsx_fragment", read],
  ["tsconfig", read],
  ["env", read],
  ["routes", read],
  ["route", read],
  ["workers_dev", read],
  ["observability", read],
  // Nothing to change here.
  ["preview_urls", noEffect],
  ["usage_model", noEffect],
  ["upload_source_maps", noEffect],
  ["keep_vars", noEffect],
  ["send_metrics", noEffect],
  ["legacy_env", noEffect],
  ["dev", noEffect],
  ["zone_id", noEffect],
  ["base_dir", noEffect],
  ["preserve_file_names", noEffect],
  ["$schema", noEffect],
  // Refused: each changes what runs, and this platform does not have it (yet).
  ["ai", refused("Workers AI")],
  ["analytics_engine_datasets", refused("Analytics Engine")],
  ["browser", refused("Browser Rendering")],
  ["hyperdrive", refused("Hyperdrive")],
  ["vectorize", refused("Vectorize")],
  ["mtls_certificates", refused("mTLS certificates")],
  ["dispatch_namespaces", refused("dispatch namespaces (Workers for Platforms)")],
  ["workflows", refused("Workflows")],
  ["send_email", refused("Email Workers")],
  ["images", refused("Images")],
  ["version_metadata", refused("the version metadata binding")],
  ["pipelines", refused("Pipelines")],
  ["logfwdr", refused("logfwdr")],
  ["constellation", refused("Constellation")],
  ["cloudchamber", refused("Cloudchamber")],
  ["containers", refused("Containers")],
  ["unsafe", refused("unsafe bindings and metadata")],
  ["placement", refused("Smart Placement", (v) => isEmpty(v) || (v as { mode?: unknown }).mode === "off")],
  ["limits", refused("CPU time limits")],
  ["logpush", refused("Logpush")],
  ["tail_consumers", refused("Tail Workers")],
  ["first_party_worker", refused("first-party Workers")],
  ["no_bundle", refused("uploading without bundling")],
  ["find_additional_modules", refused("additional modules")],
  ["rules", refused("module rules")],
  ["node_compat", refused('the Node.js polyfills of node_compat (use compatibility_flags = ["nodejs_compat"])')],
  ["site", refused("Workers Sites")],
  ["legacy_assets", refused("legacy assets")],
  ["wasm_modules", refused("service-worker wasm modules")],
  ["text_blobs", refused("service-worker text blobs")],
  ["data_blobs", refused("service-worker data blobs")],
  ["pages_build_output_dir", refused("Pages projects")],
  ["kv-namespaces", refused('the legacy "kv-namespaces" key')],
  ["experimental_services", refused("service bindings")],
]);

/**
 * Keys an `[env.X]` table does not inherit from the top level (wrangler's "non-inheritable" fields): with `--env`,
 * the top-level ones are not used, so they are not checked either.
 */
const NOT_INHERITED = new Set([
  "define",
  "vars",
  "durable_objects",
  "workflows",
  "cloudchamber",
  "containers",
  "kv_namespaces",
  "send_email",
  "queues",
  "r2_buckets",
  "d1_databases",
  "vectorize",
  "hyperdrive",
  "services",
  "analytics_engine_datasets",
  "browser",
  "ai",
  "images",
  "version_metadata",
  "unsafe",
  "mtls_certificates",
  "tail_consumers",
  "dispatch_namespaces",
  "pipelines",
  "constellation",
  "experimental_services",
  "kv-namespaces",
]);

/** The keys in effect for the selected environment, each with the table it was written in ("" for the top level). */
export function effectiveKeys(cfg: ProjectConfig): Map<string, { value: unknown; table: string }> {
  const out = new Map<string, { value: unknown; table: string }>();
  const { top, env } = cfg.raw;
  if (env) for (const [key, value] of Object.entries(env)) out.set(key, { value, table: `env.${cfg.env}` });
  for (const [key, value] of Object.entries(top)) {
    if (key === "env" || out.has(key) || (env && NOT_INHERITED.has(key))) continue;
    out.set(key, { value, table: "" });
  }
  return out;
}

/** How a key is written in TOML: `[[d1_databases]]` for a list of tables, `[assets]` for a table, else the key. */
function spelled(key: string, value: unknown, table: string): string {
  const path = table ? `${table}.${key}` : key;
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "object" && v !== null)) return `[[${path}]]`;
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    // A table of lists of tables, as `[[durable_objects.bindings]]` or `[[queues.producers]]`, is named by its lists.
    const lists = Object.entries(value).filter(([, v]) => Array.isArray(v) && v.length > 0);
    if (lists.length > 0) return lists.map(([k, v]) => spelled(k, v, path)).join(", ");
    return `[${path}]`;
  }
  return table ? `${table}.${key}` : key;
}

/** The sections of the config that deploy refuses, each as written and with what it is; empty when none. */
export function unsupportedSections(cfg: ProjectConfig): string[] {
  const out: string[] = [];
  for (const [key, { value, table }] of effectiveKeys(cfg)) {
    const treatment = CONFIG_KEYS.get(key);
    if (!treatment) out.push(`${spelled(key, value, table)}: not a wrangler 3 config key this platform knows`);
    else if (treatment.kind === "refused" && !treatment.allowed?.(value)) out.push(`${spelled(key, value, table)}: ${treatment.what}`);
  }
  return out;
}

/** Refuses, before anything is bundled or uploaded, a config with a section this platform cannot honour. */
export function refuseUnsupportedSections(cfg: ProjectConfig): void {
  const sections = unsupportedSections(cfg);
  if (sections.length === 0) return;
  throw new UserError(
    `${cfg.path}: ${sections.length === 1 ? "this section is" : "these sections are"} not supported by this platform yet, so nothing was deployed:\n` +
      sections.map((s) => `  - ${s}`).join("\n"),
    'Remove them from the config (see docs/workers.md, "Config", for what is supported).',
  );
}
