import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { bindingNameProblem } from "../../core/cli/config-file.js";
import { EdgeError } from "../../core/errors.js";
import { formParts } from "../../core/http/multipart.js";
import { parseWith } from "../../core/http/validate.js";
import { BracketedFieldError, metadataFromBracketedFields } from "./form-metadata.js";
import { WorkerCodes, type Binding, type ModuleKind } from "../model.js";
import { parseUserJson } from "../../core/http/json-input.js";

/** Upload limits: the hosted API's paid-plan script size, and its secret size. */
export const UploadLimits = {
  scriptBytes: 10 * 1024 * 1024,
  parts: 100,
  secretBytes: 5 * 1024,
} as const;

/** A secret's text, limited in UTF-8 bytes (the error never quotes the value). */
export const secretText = () =>
  z.string().refine((t) => Buffer.byteLength(t, "utf8") <= UploadLimits.secretBytes, { message: `must be at most ${UploadLimits.secretBytes} bytes` });

const invalid = (message: string) => new EdgeError(400, WorkerCodes.validation, message);
const tooLarge = (message: string) => new EdgeError(413, WorkerCodes.scriptTooLarge, message);
const uploadErrors = { invalid, tooLarge };

/** A binding's (or secret's) name; the message says why one is refused. */
export const bindingName = () =>
  z.string().superRefine((name, ctx) => {
    const problem = bindingNameProblem(name);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

const bindingSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("plain_text"), name: bindingName(), text: z.string() }),
  z.object({ type: z.literal("secret_text"), name: bindingName(), text: secretText() }),
  z.object({ type: z.literal("r2_bucket"), name: bindingName(), bucket_name: z.string().min(1) }),
  z.object({ type: z.literal("kv_namespace"), name: bindingName(), namespace_id: z.string().min(1) }),
]);

/** The `metadata` part. Unknown fields wrangler sends (keep_bindings, code_update_strategy, logpush…) are accepted and have no effect here. */
const metadataSchema = z.looseObject({
  main_module: z.string().min(1).optional(),
  body_part: z.string().optional(),
  compatibility_date: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: "must be a date like 2024-09-01" })
    .optional(),
  compatibility_flags: z.array(z.string().regex(/^[a-z0-9_]+$/, { message: "must be a flag name" })).default([]),
  bindings: z.array(z.looseObject({ type: z.string(), name: z.string() })).default([]),
});

export interface ParsedUpload {
  mainModule: string;
  compatibilityDate?: string;
  compatibilityFlags: string[];
  bindings: Binding[];
  secrets: { name: string; text: string }[];
  modules: { name: string; kind: ModuleKind; content: Buffer }[];
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

const SUPPORTED = "r2_bucket, kv_namespace, plain_text, secret_text";

/** Reads the multipart body of a script upload and checks everything that needs no store. */
export async function readUpload(req: FastifyRequest): Promise<ParsedUpload> {
  if (!req.isMultipart()) throw invalid("A script upload must be multipart/form-data with a `metadata` part and the module parts");
  let metadataText: string | undefined;
  const bracketed: { name: string; value: string }[] = [];
  const parts: { name: string; contentType: string; content: Buffer }[] = [];
  let total = 0;
  for await (const part of formParts(req, uploadErrors)) {
    if (part.field === "metadata") {
      if (metadataText !== undefined) throw invalid("The upload has more than one `metadata` part");
      metadataText = part.content.toString("utf8");
      continue;
    }
    if (part.filename === undefined && part.field.startsWith("metadata[")) {
      bracketed.push({ name: part.field, value: part.content.toString("utf8") });
      continue;
    }
    total += part.content.length;
    if (total > UploadLimits.scriptBytes) throw tooLarge(`The script exceeds the size limit of ${UploadLimits.scriptBytes} bytes`);
    parts.push({ name: part.filename ?? part.field, contentType: part.contentType, content: part.content });
  }
  if (metadataText === undefined && bracketed.length === 0) throw invalid("The upload has no `metadata` part");
  if (metadataText !== undefined && bracketed.length > 0)
    throw invalid("Send the metadata either as one `metadata` part or as `metadata[...]` fields, not both");
  let raw: unknown;
  if (metadataText !== undefined) {
    try {
      raw = parseUserJson(metadataText);
    } catch (e) {
      throw invalid(`metadata: not valid JSON (${(e as Error).message})`);
    }
  } else {
    try {
      raw = metadataFromBracketedFields(bracketed);
    } catch (e) {
      if (e instanceof BracketedFieldError) throw invalid(e.message);
      throw e;
    }
  }
  const meta = parseWith(metadataSchema, raw, WorkerCodes.validation);
  if (!meta.main_module) {
    throw invalid(
      meta.body_part ? "Service-worker syntax (body_part) is not supported; upload an ES module worker with main_module" : "metadata: main_module is required",
    );
  }

  const modules: ParsedUpload["modules"] = [];
  for (const p of parts) {
    const kind = moduleKind(p.contentType);
    if (kind === "skip") continue;
    if (!kind) throw invalid(`Module ${p.name}: unsupported content type "${p.contentType}"`);
    if (modules.some((m) => m.name === p.name)) throw invalid(`Module ${p.name} is given twice`);
    modules.push({ name: p.name, kind, content: p.content });
  }
  const main = modules.find((m) => m.name === meta.main_module);
  if (!main) throw invalid(`main_module "${meta.main_module}" is not one of the uploaded parts (${modules.map((m) => m.name).join(", ") || "none"})`);
  if (main.kind !== "esModule") throw invalid(`main_module "${main.name}" must be an ES module (content type application/javascript+module)`);

  const bindings: Binding[] = [];
  const secrets: ParsedUpload["secrets"] = [];
  const seen = new Set<string>();
  meta.bindings.forEach((rawBinding, i) => {
    if (!["plain_text", "secret_text", "r2_bucket", "kv_namespace"].includes(rawBinding.type)) {
      throw invalid(`bindings.${i}: binding type "${rawBinding.type}" is not supported here (supported: ${SUPPORTED})`);
    }
    const b = parseWith(bindingSchema, rawBinding, WorkerCodes.validation);
    if (seen.has(b.name)) throw invalid(`bindings.${i}: the name ${b.name} is used by more than one binding`);
    seen.add(b.name);
    if (b.type === "secret_text") secrets.push({ name: b.name, text: b.text });
    else bindings.push(b);
  });
  return {
    mainModule: meta.main_module,
    compatibilityDate: meta.compatibility_date,
    compatibilityFlags: meta.compatibility_flags,
    bindings,
    secrets,
    modules,
  };
}
