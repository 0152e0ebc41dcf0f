import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { MultipartLimits } from "../../core/http/multipart.js";
import { formParts } from "../../core/http/multipart.js";
import { parseUserJson } from "../../core/http/json-input.js";
import { parseWith } from "../../core/http/validate.js";
import { bindingName } from "../bindings/binding-type.js";
import { inheritBindingSchema, type InheritBinding } from "../bindings/inherit.js";
import { bindingType, SUPPORTED_BINDING_TYPES, type Binding } from "../bindings/registry.js";
import { parseMigrations, type UploadMigrations } from "../durable-objects/migrations.js";
import { parseUploadAssets, type UploadAssets } from "../assets/assets.js";
import { ASSETS_ONLY_MODULE } from "../assets/assets-only.js";
import { WorkersCodes, WorkersErrors } from "../errors.js";
import { firstExperimentalFlag } from "../runtime/experimental-flags.js";
import type { ModuleKind, ModuleSource } from "../store.js";
import { BracketedFieldError, metadataFromBracketedFields } from "./form-metadata.js";
import { checkUploadSettings } from "./settings.js";
import type { ObservabilitySetting } from "../logs/settings.js";

/** Upload limits: the hosted API's paid-plan script size, and its secret size. */
const UploadLimits = {
  scriptBytes: 10 * 1024 * 1024,
  parts: 100,
  secretBytes: 5 * 1024,
  annotationChars: 1000,
} as const;

/** What the multipart parser of the Workers routes accepts (a module may be as large as the whole script). */
export const uploadMultipartLimits: MultipartLimits = {
  fileSize: UploadLimits.scriptBytes,
  files: UploadLimits.parts,
  fields: UploadLimits.parts,
  fieldSize: 1024 * 1024,
};

/** A secret's text, limited in UTF-8 bytes (the error never quotes the value). */
export const secretText = () =>
  z.string().refine((t) => Buffer.byteLength(t, "utf8") <= UploadLimits.secretBytes, { message: `must be at most ${UploadLimits.secretBytes} bytes` });

const secretBindingSchema = z.object({ type: z.literal("secret_text"), name: bindingName(), text: secretText() });

/**
 * The `metadata` part. Settings of features this platform lacks (logpush, observability, placement, tail_consumers,
 * limits) are checked by checkUploadSettings; the other fields wrangler sends (keep_bindings, usage_model,
 * annotations…) describe the upload itself and are accepted.
 */
const metadataSchema = z.looseObject({
  main_module: z.string().min(1).optional(),
  body_part: z.string().optional(),
  compatibility_date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be a date like 2024-09-01" })
    .optional(),
  compatibility_flags: z.array(z.string().regex(/^[a-z0-9_]+$/, { message: "must be a flag name" })).default([]),
  bindings: z.array(z.looseObject({ type: z.string(), name: z.string() })).default([]),
  // What `wrangler versions upload --message/--tag` sends; this platform's own bound on their length.
  annotations: z
    .looseObject({
      "workers/message": z.string().max(UploadLimits.annotationChars).optional(),
      "workers/tag": z.string().max(UploadLimits.annotationChars).optional(),
    })
    .optional(),
});

export interface ParsedUpload {
  mainModule: string;
  compatibilityDate?: string;
  compatibilityFlags: string[];
  bindings: Binding[];
  /** `inherit` bindings, resolved against an earlier version by the deployer (bindings/inherit.ts). */
  inherits: InheritBinding[];
  /** `?bindings_inherit=strict`: an inherit binding that names nothing is refused rather than dropped. */
  strictInherit: boolean;
  secrets: { name: string; text: string }[];
  modules: ModuleSource[];
  /** Durable Object migrations to apply with this version. */
  migrations?: UploadMigrations;
  /** Static assets uploaded for this version (`assets.jwt`), and whether a version without them keeps the Worker's (`keep_assets`). */
  assets?: UploadAssets;
  keepAssets: boolean;
  /** `workers/message` and `workers/tag` of the metadata's annotations. */
  message?: string;
  tag?: string;
  /** The metadata's `observability` (Workers Logs), when it has one: set on the Worker once the upload is deployed. */
  observability?: ObservabilitySetting;
}

/** workerd module kind for a part's content type; undefined for parts that are not code (source maps). */
export function moduleKind(contentType: string): ModuleKind | "skip" | undefined {
  const ct = contentType.split(";")[0].trim().toLowerCase();
  switch (ct) {
    case "application/javascript+module":
    case "text/javascript+module":
      return "esModule";
    case "application/javascript":
    case "text/javascript":
    case "application/javascript+commonjs":
      return "commonJsModule";
    case "text/plain":
      return "text";
    case "application/octet-stream":
      return "data";
    case "application/wasm":
      return "wasm";
    case "application/json":
      return "json";
    case "application/source-map":
      return "skip";
  }
  return undefined;
}

/** The content type each module kind is answered with when a script is downloaded. */
export const MODULE_CONTENT_TYPES: Readonly<Record<ModuleKind, string>> = {
  esModule: "application/javascript+module",
  commonJsModule: "application/javascript",
  text: "text/plain",
  data: "application/octet-stream",
  wasm: "application/wasm",
  json: "application/json",
};

/** The metadata object, from one JSON part or from bracketed fields. */
function metadataOf(json: string | undefined, bracketed: { name: string; value: string }[]): unknown {
  if (json !== undefined) {
    try {
      return parseUserJson(json);
    } catch (e) {
      throw WorkersErrors.metadataNotJson((e as Error).message);
    }
  }
  try {
    return metadataFromBracketedFields(bracketed);
  } catch (e) {
    if (e instanceof BracketedFieldError) throw WorkersErrors.metadataField(e.message);
    throw e;
  }
}

/** Reads the multipart body of a script upload and checks everything that needs no store. */
const inheritQuerySchema = z.looseObject({ bindings_inherit: z.literal("strict").optional() });

export async function readUpload(req: FastifyRequest): Promise<ParsedUpload> {
  const { bindings_inherit } = parseWith(inheritQuerySchema, req.query ?? {}, WorkersCodes.validation);
  if (!req.isMultipart()) throw WorkersErrors.notMultipart();
  let metadataText: string | undefined;
  const bracketed: { name: string; value: string }[] = [];
  const parts: { name: string; contentType: string; content: Buffer }[] = [];
  let total = 0;
  for await (const part of formParts(req, WorkersErrors.uploadBody)) {
    if (part.field === "metadata") {
      if (metadataText !== undefined) throw WorkersErrors.metadataTwice();
      metadataText = part.content.toString("utf8");
      continue;
    }
    if (part.filename === undefined && part.field.startsWith("metadata[")) {
      bracketed.push({ name: part.field, value: part.content.toString("utf8") });
      continue;
    }
    total += part.content.length;
    if (total > UploadLimits.scriptBytes) throw WorkersErrors.scriptTooLarge(UploadLimits.scriptBytes);
    parts.push({ name: part.filename ?? part.field, contentType: part.contentType, content: part.content });
  }
  if (metadataText === undefined && bracketed.length === 0) throw WorkersErrors.noMetadata();
  if (metadataText !== undefined && bracketed.length > 0) throw WorkersErrors.metadataInBothForms();
  const meta = parseWith(metadataSchema, metadataOf(metadataText, bracketed), WorkersCodes.validation);
  const { observability } = checkUploadSettings(meta);
  const experimental = firstExperimentalFlag(meta.compatibility_flags);
  if (experimental) throw WorkersErrors.experimentalFlag(experimental.flag, experimental.index);
  // Assets and no code at all: an assets-only Worker (what wrangler uploads for a config without `main`).
  const assetsOnly = !meta.main_module && meta.body_part === undefined && meta.assets !== undefined && parts.length === 0;
  if (assetsOnly) parts.push({ name: ASSETS_ONLY_MODULE.name, contentType: "application/javascript+module", content: ASSETS_ONLY_MODULE.content });
  const mainModule = assetsOnly ? ASSETS_ONLY_MODULE.name : meta.main_module;
  if (!mainModule) throw meta.body_part ? WorkersErrors.serviceWorkerSyntax() : WorkersErrors.mainModuleRequired();

  const modules: ModuleSource[] = [];
  for (const p of parts) {
    const kind = moduleKind(p.contentType);
    if (kind === "skip") continue;
    if (!kind) throw WorkersErrors.moduleContentType(p.name, p.contentType);
    if (modules.some((m) => m.name === p.name)) throw WorkersErrors.moduleTwice(p.name);
    modules.push({ name: p.name, kind, content: p.content });
  }
  const main = modules.find((m) => m.name === mainModule);
  if (!main)
    throw WorkersErrors.mainModuleNotUploaded(
      mainModule,
      modules.map((m) => m.name),
    );
  if (main.kind !== "esModule") throw WorkersErrors.mainModuleNotEsm(main.name);

  const bindings: Binding[] = [];
  const inherits: InheritBinding[] = [];
  const secrets: ParsedUpload["secrets"] = [];
  const seen = new Set<string>();
  meta.bindings.forEach((raw, i) => {
    const own = raw.type === "secret_text" || raw.type === "inherit";
    const type = own ? undefined : bindingType(raw.type);
    if (!own && !type) throw WorkersErrors.bindingTypeUnsupported(i, raw.type, SUPPORTED_BINDING_TYPES);
    const b = parseWith(type?.schema ?? (raw.type === "inherit" ? inheritBindingSchema : secretBindingSchema), raw, WorkersCodes.validation);
    if (seen.has(b.name)) throw WorkersErrors.bindingNameRepeated(i, b.name);
    seen.add(b.name);
    if (b.type === "secret_text") secrets.push({ name: b.name, text: b.text });
    else if (b.type === "inherit") inherits.push(b);
    else bindings.push(b);
  });
  return {
    mainModule,
    compatibilityDate: meta.compatibility_date,
    compatibilityFlags: meta.compatibility_flags,
    bindings,
    inherits,
    strictInherit: bindings_inherit === "strict",
    secrets,
    modules,
    migrations: parseMigrations(meta.migrations),
    assets: parseUploadAssets(meta.assets),
    keepAssets: meta.keep_assets === true,
    message: meta.annotations?.["workers/message"],
    tag: meta.annotations?.["workers/tag"],
    ...(observability !== undefined && { observability }),
  };
}
