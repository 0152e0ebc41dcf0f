import { readdir, readFile, stat } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import mimeDefault from "mime";
import type { CliContext } from "../../core/cli/context.js";
import type { ProjectConfig } from "../../core/cli/config-file.js";
import { UserError } from "../../core/errors.js";
import { effectiveKeys } from "../cli/config-sections.js";
import { assetHash, AssetLimits, type AssetManifest } from "./manifest.js";

/**
 * mime is an ES module whose default export is the lookup; the CLI bundle loads packages with require(), which hands
 * back the module namespace, so the default export is one level further down there.
 */
const mime = (mimeDefault as unknown as { default?: typeof mimeDefault }).default ?? mimeDefault;

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The config's `[assets]`, checked. */
export interface AssetsSection {
  directory: string;
  binding?: string;
  config: { html_handling?: string; not_found_handling?: string; run_worker_first?: boolean };
}

const KEYS = ["directory", "binding", "html_handling", "not_found_handling", "run_worker_first"];

export function assetsSection(cfg: ProjectConfig): AssetsSection | undefined {
  const a = effectiveKeys(cfg).get("assets")?.value;
  if (a === undefined) return undefined;
  if (!isTable(a) || typeof a.directory !== "string") throw new UserError(`${cfg.path}: "assets" must be a table with a "directory" (a path)`);
  const extra = Object.keys(a).find((k) => !KEYS.includes(k));
  if (extra) throw new UserError(`${cfg.path}: assets.${extra} is not supported (supported: ${KEYS.join(", ")})`);
  if (a.binding !== undefined && typeof a.binding !== "string") throw new UserError(`${cfg.path}: assets.binding must be a string`);
  if (a.run_worker_first !== undefined && typeof a.run_worker_first !== "boolean")
    throw new UserError(`${cfg.path}: assets.run_worker_first must be true or false`);
  return {
    directory: resolve(dirname(cfg.path), a.directory),
    binding: a.binding as string | undefined,
    config: {
      ...(typeof a.html_handling === "string" && { html_handling: a.html_handling }),
      ...(typeof a.not_found_handling === "string" && { not_found_handling: a.not_found_handling }),
      ...(typeof a.run_worker_first === "boolean" && { run_worker_first: a.run_worker_first }),
    },
  };
}

/** Files wrangler leaves out of the upload: its ignore file, and the Pages routing files this platform refuses. */
const SPECIAL = new Set([".assetsignore", "_redirects", "_headers"]);

/**
 * The directory's files as wrangler 3 lists them: every regular file below it (symbolic links skipped), by "/" path,
 * with wrangler's hash (so files uploaded by either tool are stored once); the limits are checked here first.
 */
export async function buildManifest(dir: string): Promise<{ manifest: AssetManifest; files: Map<string, string> }> {
  const info = await stat(dir).catch(() => undefined);
  if (!info?.isDirectory()) throw new UserError(`The assets directory does not exist: ${dir}`);
  for (const name of ["_redirects", "_headers", ".assetsignore"]) {
    if (await stat(join(dir, name)).catch(() => undefined))
      throw new UserError(`${join(dir, name)}: ${name} files are not supported by this platform; remove it`);
  }
  const manifest: AssetManifest = Object.create(null);
  const files = new Map<string, string>();
  let total = 0;
  for (const rel of await readdir(dir, { recursive: true })) {
    const abs = join(dir, rel);
    const st = await stat(abs);
    if (!st.isFile() || SPECIAL.has(rel)) continue;
    if (files.size >= AssetLimits.files)
      throw new UserError(`More than ${AssetLimits.files.toLocaleString("en-US")} files in ${dir}: a Worker version may have at most that many assets`);
    if (st.size > AssetLimits.fileBytes) throw new UserError(`${abs} is ${st.size} bytes: an asset may be at most ${AssetLimits.fileBytes / 1024 / 1024} MiB`);
    total += st.size;
    if (total > AssetLimits.versionBytes) throw new UserError(`The files in ${dir} add up to more than ${AssetLimits.versionBytes / 1024 / 1024} MiB`);
    const path = `/${relative(dir, abs).split(sep).join("/")}`;
    manifest[path] = { hash: await assetHash(Buffer.from((await readFile(abs)).toString("base64"), "latin1"), path), size: st.size };
    files.set(path, abs);
  }
  return { manifest, files };
}

/** A text type as wrangler labels it (with charset=utf-8); "application/null" when unknown: answered without a Content-Type. */
function contentTypeOf(path: string): string {
  const t = mime.getType(path);
  if (!t) return "application/null";
  return t.startsWith("text/") && !t.includes("charset") ? `${t}; charset=utf-8` : t;
}

/**
 * Uploads the assets as wrangler 3 does (session with the manifest, then each bucket of files the platform does not
 * have, base64) and returns the completion token for the script upload's `metadata.assets.jwt`.
 */
export async function uploadAssets(ctx: CliContext, section: AssetsSection, accountId: string, name: string): Promise<string> {
  const { manifest, files } = await buildManifest(section.directory);
  const api = ctx.api();
  const session = await api.fetchEnvelope<{ jwt: string; buckets: string[][] }>(
    "POST",
    `/accounts/${accountId}/workers/scripts/${encodeURIComponent(name)}/assets-upload-session`,
    { json: { manifest } },
  );
  const pathOf = new Map(Object.entries(manifest).map(([p, e]) => [e.hash, p]));
  const count = session.result.buckets.flat().length;
  ctx.log.info(
    count ? `Uploading ${count} new or changed static asset${count === 1 ? "" : "s"} (of ${files.size})…` : "No static assets to upload (all stored already).",
  );
  let jwt = count ? "" : session.result.jwt;
  for (const bucket of session.result.buckets) {
    const form = new FormData();
    for (const hash of bucket) {
      const path = pathOf.get(hash)!;
      form.append(hash, new Blob([(await readFile(files.get(path)!)).toString("base64")], { type: contentTypeOf(path) }), hash);
    }
    const encoded = new Response(form);
    const res = await api.fetchEnvelope<{ jwt?: string }>("POST", `/accounts/${accountId}/workers/assets/upload`, {
      query: { base64: "true" },
      body: Buffer.from(await encoded.arrayBuffer()),
      headers: { "content-type": encoded.headers.get("content-type")!, authorization: `Bearer ${session.result.jwt}` },
    });
    jwt = res.result.jwt ?? jwt;
  }
  if (!jwt) throw new UserError("The platform did not confirm that every static asset was uploaded; run the deploy again");
  return jwt;
}
