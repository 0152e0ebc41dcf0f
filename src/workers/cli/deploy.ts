import { spawnSync } from "node:child_process";
import { basename, dirname, resolve } from "node:path";
import type { CliContext } from "../../core/cli/context.js";
import type { ProjectConfig } from "../../core/cli/config-file.js";
import { loadDeploySections, type DeploySection } from "../../core/cli/deploy-sections.js";
import { UserError } from "../../core/errors.js";
import type { Binding } from "../bindings/registry.js";
import { durableObjectBindings, migrationsToUpload } from "../durable-objects/cli-config.js";
import { serviceBindings } from "../services/cli-config.js";
import { assetsSection, uploadAssets } from "../assets/cli-config.js";
import { cronProblem } from "../triggers/cron.js";
import { applyRoutes, routesSection } from "../routing/cli-config.js";
import { effectiveKeys, refuseUnsupportedSections } from "./config-sections.js";
import { resolveScriptName, scriptPath, uploadForm } from "./target.js";

interface DeployArgs {
  script?: string;
  name?: string;
  env?: string;
  "compatibility-date"?: string;
  "dry-run"?: boolean;
  triggers?: string[];
}

/**
 * The cron triggers to set, as wrangler decides: `--triggers`, else `[triggers] crons` of the config; undefined when
 * neither is given, and then the Worker's triggers are left as they are (`crons = []` removes them all).
 */
function cronsOf(args: DeployArgs, cfg: ProjectConfig | undefined): string[] | undefined {
  if (args.triggers?.length) return args.triggers;
  const triggers = cfg && effectiveKeys(cfg).get("triggers")?.value;
  if (triggers === undefined) return undefined;
  const crons = (triggers as { crons?: unknown }).crons;
  if (typeof triggers !== "object" || triggers === null || Array.isArray(triggers) || Object.keys(triggers).some((k) => k !== "crons")) {
    throw new UserError(`${cfg!.path}: "triggers" must be a table with one key, crons (e.g. crons = ["*/5 * * * *"])`);
  }
  if (crons === undefined) return undefined;
  if (!Array.isArray(crons) || crons.some((c) => typeof c !== "string")) throw new UserError(`${cfg!.path}: "triggers.crons" must be an array of strings`);
  return crons as string[];
}

/** A section of the config another area reads (core/cli/deploy-sections.ts), with its value in the environment. */
interface ConfigSection {
  section: DeploySection;
  value: unknown;
}

async function configSections(cfg: ProjectConfig): Promise<ConfigSection[]> {
  const keys = effectiveKeys(cfg);
  return (await loadDeploySections()).map(({ key, section }) => ({ section, value: keys.get(key)?.value }));
}

/** Bindings in the order wrangler sends them: vars, then KV namespaces, then Durable Objects, then R2 buckets, then D1 databases, then services. */
function bindingsOf(cfg: ProjectConfig | undefined, sections: readonly ConfigSection[]): Binding[] {
  if (!cfg) return [];
  const out: Binding[] = Object.entries(cfg.vars).map(([name, text]) => ({ type: "plain_text", name, text }));
  for (const kv of cfg.kv_namespaces) {
    if (!kv.id)
      throw new UserError(
        `${cfg.path}: the KV namespace binding "${kv.binding}" has no "id"; create one with \`edgecli kv namespace create\` and put its id there`,
      );
    out.push({ type: "kv_namespace", name: kv.binding, namespace_id: kv.id });
  }
  out.push(...durableObjectBindings(cfg));
  for (const r2 of cfg.r2_buckets) out.push({ type: "r2_bucket", name: r2.binding, bucket_name: r2.bucket_name });
  for (const d1 of cfg.d1_databases) {
    if (!d1.database_id)
      throw new UserError(`${cfg.path}: the D1 binding "${d1.binding}" has no "database_id"; create one with \`edgecli d1 create\` and put its uuid there`);
    out.push({ type: "d1", name: d1.binding, id: d1.database_id });
  }
  // Other areas' sections (Queues' producers), as the upload's API checks each binding.
  for (const { section, value } of sections) out.push(...(section.bindings(value, cfg) as Binding[]));
  out.push(...(serviceBindings(cfg) as Binding[]));
  const assets = assetsSection(cfg);
  if (assets?.binding) out.push({ type: "assets", name: assets.binding });
  return out;
}

/** The config's settings that change the bundle, as wrangler passes them to esbuild. */
interface BundleSettings {
  define?: Record<string, string>;
  alias?: Record<string, string>;
  minify?: boolean;
  jsxFactory?: string;
  jsxFragment?: string;
  tsconfig?: string;
}

function stringTable(path: string, key: string, value: unknown): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value) || Object.values(value).some((v) => typeof v !== "string")) {
    throw new UserError(`${path}: "${key}" must be a table of strings`);
  }
  return Object.fromEntries(Object.entries(value as Record<string, string>));
}

function typed<T>(path: string, key: string, value: unknown, type: "string" | "boolean"): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== type) throw new UserError(`${path}: "${key}" must be a ${type}`);
  return value as T;
}

function bundleSettings(cfg: ProjectConfig | undefined): BundleSettings {
  if (!cfg) return {};
  const keys = effectiveKeys(cfg);
  const value = (key: string) => keys.get(key)?.value;
  const tsconfig = typed<string>(cfg.path, "tsconfig", value("tsconfig"), "string");
  return {
    define: stringTable(cfg.path, "define", value("define")),
    alias: stringTable(cfg.path, "alias", value("alias")),
    minify: typed<boolean>(cfg.path, "minify", value("minify"), "boolean"),
    jsxFactory: typed<string>(cfg.path, "jsx_factory", value("jsx_factory"), "string"),
    jsxFragment: typed<string>(cfg.path, "jsx_fragment", value("jsx_fragment"), "string"),
    tsconfig: tsconfig === undefined ? undefined : resolve(dirname(cfg.path), tsconfig),
  };
}

/** Runs the config's `[build] command` (in `build.cwd`, else the config's directory) before bundling, as wrangler does. */
function runBuild(ctx: CliContext, cfg: ProjectConfig | undefined): void {
  const build = cfg && effectiveKeys(cfg).get("build")?.value;
  if (build === undefined) return;
  if (typeof build !== "object" || build === null || Array.isArray(build)) throw new UserError(`${cfg!.path}: "build" must be a table`);
  const { command, cwd } = build as { command?: unknown; cwd?: unknown };
  if (command === undefined) return;
  if (typeof command !== "string") throw new UserError(`${cfg!.path}: "build.command" must be a string`);
  if (cwd !== undefined && typeof cwd !== "string") throw new UserError(`${cfg!.path}: "build.cwd" must be a string`);
  ctx.log.info(`Running custom build: ${command}`);
  const run = spawnSync("sh", ["-c", command], { cwd: resolve(dirname(cfg!.path), cwd ?? "."), stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  for (const line of `${run.stdout ?? ""}${run.stderr ?? ""}`.split("\n").filter(Boolean)) ctx.log.info(line);
  if (run.status !== 0) throw new UserError(`The custom build command failed (${run.signal ?? `exit code ${run.status}`}): ${command}`);
}

/** Bundles `entry` and everything it imports into one ES module for workerd (TypeScript included). */
async function bundle(entry: string, settings: BundleSettings): Promise<{ code: Buffer; name: string }> {
  const esbuild = await import("esbuild");
  const name = `${basename(entry).replace(/\.[^.]+$/, "")}.js`;
  try {
    const out = await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      conditions: ["workerd", "worker", "browser"],
      external: ["cloudflare:*", "node:*"],
      write: false,
      outfile: name,
      logLevel: "silent",
      ...settings,
    });
    return { code: Buffer.from(out.outputFiles[0].contents), name };
  } catch (e) {
    const errors = (e as { errors?: { text: string; location?: { file: string; line: number; column: number } }[] }).errors;
    if (!errors) throw e;
    throw new UserError(
      `Could not bundle ${entry}:\n${errors.map((x) => (x.location ? `${x.location.file}:${x.location.line}:${x.location.column}: ${x.text}` : x.text)).join("\n")}`,
    );
  }
}

/** A D1 binding as wrangler prints it: `<database_name> (<uuid>)`, or the uuid alone when the config names no database. */
const d1Shown = (cfg: ProjectConfig | undefined, b: Binding) => {
  const id = (b as { id: string }).id;
  const name = cfg?.d1_databases.find((d) => d.binding === b.name)?.database_name;
  return name ? `${name} (${id})` : id;
};

function printBindings(ctx: CliContext, bindings: Binding[], cfg: ProjectConfig | undefined): void {
  if (bindings.length === 0) return ctx.log.info("No bindings found.");
  ctx.log.info("Your worker has access to the following bindings:");
  const groups: [Binding["type"], string, (b: Binding) => string][] = [
    ["kv_namespace", "KV Namespaces", (b) => (b as { namespace_id: string }).namespace_id],
    ["durable_object_namespace", "Durable Objects", (b) => (b as { class_name: string }).class_name],
    ["r2_bucket", "R2 Buckets", (b) => (b as { bucket_name: string }).bucket_name],
    ["d1", "D1 Databases", (b) => d1Shown(cfg, b)],
    ["service", "Services", (b) => (b as { service: string }).service],
    ["assets", "Assets", () => "static assets"],
    ["plain_text", "Vars", (b) => JSON.stringify((b as { text: string }).text)],
    ["queue", "Queues", (b) => (b as { queue_name: string }).queue_name],
  ];
  for (const [type, title, show] of groups) {
    const of = bindings.filter((b) => b.type === type);
    if (of.length === 0) continue;
    ctx.log.info(`- ${title}:`);
    for (const b of of) ctx.log.info(`  - ${b.name}: ${show(b)}`);
  }
}

/**
 * The module to upload: the entry point bundled; undefined for an assets-only Worker (a config with `[assets]` and no
 * `main`), which is uploaded without code, as wrangler does, and served from its files by the platform.
 */
async function moduleToUpload(args: DeployArgs, ctx: CliContext, cfg: ProjectConfig | undefined): Promise<{ code: Buffer; name: string } | undefined> {
  const mainRel = args.script ?? cfg?.main;
  if (!mainRel) {
    const assets = cfg && assetsSection(cfg);
    if (!assets) throw new UserError('Missing entry-point: give the script as an argument or set "main" in the config');
    if (assets.binding)
      throw new UserError(
        `${cfg.path}: an assets-only Worker (no "main") has no code to use assets.binding "${assets.binding}": remove the binding, or set "main"`,
      );
    return undefined;
  }
  runBuild(ctx, cfg);
  return bundle(resolve(args.script || !cfg ? ctx.cwd : dirname(cfg.path), mainRel), bundleSettings(cfg));
}

/** `edgecli deploy`: bundles the entry point and uploads it with the config's bindings, as `wrangler deploy` does. */
export async function deploy(args: DeployArgs, ctx: CliContext): Promise<void> {
  const cfg = await ctx.config(args.env);
  if (cfg) refuseUnsupportedSections(cfg);
  const name = await resolveScriptName(ctx, args);
  const compatibilityDate = args["compatibility-date"] ?? cfg?.compatibility_date;
  if (!compatibilityDate) throw new UserError('A compatibility_date is required when deploying. Add one to the config, e.g. compatibility_date = "2024-09-01"');
  const sections = cfg ? await configSections(cfg) : [];
  const bindings = bindingsOf(cfg, sections);
  const crons = cronsOf(args, cfg);
  const routes = routesSection(cfg);
  // Checked before anything is uploaded; applied after.
  for (const { section, value } of sections) section.check(value, cfg!, name);
  for (const cron of crons ?? []) {
    const problem = cronProblem(cron);
    if (problem) throw new UserError(`Invalid cron expression "${cron}": ${problem}`);
  }
  const started = Date.now();
  const module = await moduleToUpload(args, ctx, cfg);
  ctx.log.info(module ? `Total Upload: ${(module.code.length / 1024).toFixed(2)} KiB` : "No code: an assets-only Worker");
  printBindings(ctx, bindings, cfg);
  if (args["dry-run"]) return ctx.log.info("--dry-run: exiting now.");

  const accountId = await ctx.accountId(args.env);
  const assets = cfg && assetsSection(cfg);
  const assetsJwt = assets && (await uploadAssets(ctx, assets, accountId, name));
  const metadata = {
    ...(module && { main_module: module.name }),
    bindings,
    compatibility_date: compatibilityDate,
    compatibility_flags: cfg?.compatibility_flags ?? [],
    keep_bindings: ["secret_text"],
    ...(cfg && { migrations: await migrationsToUpload(ctx, cfg, accountId, name) }),
    ...(assets && { assets: { jwt: assetsJwt, config: assets.config } }),
    // As wrangler: the config's [observability] (Workers Logs), or off, so that a Worker deployed without it has none.
    observability: (cfg && effectiveKeys(cfg).get("observability")?.value) ?? { enabled: false },
  };
  const form = new FormData();
  form.append("metadata", JSON.stringify(metadata));
  if (module) form.append(module.name, new Blob([module.code], { type: "application/javascript+module" }), module.name);
  const { result, messages } = await uploadForm<{ deployment_id: string; url?: string }>(ctx, scriptPath(accountId, name), form, { excludeScript: "true" });
  for (const m of messages ?? []) ctx.log.warn(m.message);
  ctx.log.info(`Uploaded ${name} (${((Date.now() - started) / 1000).toFixed(2)} sec)`);
  if (crons) {
    // The API checks each expression: a bad one is refused there with its reason, and the triggers stay as they were.
    await ctx.api().fetchEnvelope("PUT", `${scriptPath(accountId, name)}/schedules`, { json: crons.map((cron) => ({ cron })) });
  }
  const routeTargets = await applyRoutes(ctx, routes, scriptPath(accountId, name));
  for (const { section, value } of sections) for (const line of await section.apply(ctx, value, cfg!, accountId, name)) ctx.log.info(`  ${line}`);
  ctx.log.info(`Deployed ${name} triggers`);
  if (result.url && (routes.workersDev || !routes.given)) ctx.log.info(`  ${result.url}`);
  for (const target of routeTargets) ctx.log.info(`  ${target}`);
  for (const cron of crons ?? []) ctx.log.info(`  schedule: ${cron}`);
  ctx.log.info(`Current Version ID: ${result.deployment_id}`);
}
