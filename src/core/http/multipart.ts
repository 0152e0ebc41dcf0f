import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Multipart } from "@fastify/multipart";
import { EdgeError } from "../errors.js";

/**
 * Multipart bodies for every route that takes them (worker uploads, KV values with metadata, DNS zone
 * imports). The plugin and busboy report a broken body (no boundary, cut short, bad part headers, a limit
 * reached) as plain errors from the part iterator; routes that iterated it themselves let those through
 * as 500s. Routes read their parts through `formParts`, which turns every such error into a 4xx EdgeError.
 */

/** busboy's limits; a value past `fieldSize` or a name past `fieldNameSize` is refused, never truncated. */
export interface MultipartLimits {
  fileSize: number;
  files: number;
  fields: number;
  fieldSize?: number;
}

export async function registerMultipart(app: FastifyInstance, limits: MultipartLimits): Promise<void> {
  const { default: multipart } = await import("@fastify/multipart");
  await app.register(multipart, { limits });
}

/** One part, read whole: a plain field or a file. */
export interface FormPart {
  /** The form field's name. */
  field: string;
  /** The file name a file part carries; undefined for a plain field. */
  filename?: string;
  /** The part's declared content type ("" when none). */
  contentType: string;
  content: Buffer;
}

/** How a route words a refused body: its own codes in its own envelope. */
export interface MultipartErrors {
  /** A body that is not valid multipart, or a JSON field that is not JSON (400). */
  invalid(message: string): EdgeError;
  /** A part or the number of parts past the route's limits (413). */
  tooLarge(message: string): EdgeError;
}

const TOO_LARGE = new Set(["FST_REQ_FILE_TOO_LARGE", "FST_PARTS_LIMIT", "FST_FILES_LIMIT", "FST_FIELDS_LIMIT"]);

function refusal(e: unknown, errors: MultipartErrors): EdgeError {
  if (e instanceof EdgeError) return e;
  const err = e as { code?: string; message?: string };
  if (err.code && TOO_LARGE.has(err.code)) return errors.tooLarge(`multipart body is too large: ${err.message}`);
  if (err.code === "FST_PROTO_VIOLATION") return errors.invalid("multipart body: a field may not be named after an Object.prototype property");
  return errors.invalid(`malformed multipart body: ${err.message ?? String(e)}`);
}

/**
 * The parts of a multipart request, each read whole, in order. Every failure of the body itself is
 * thrown as an EdgeError from `errors`; errors the caller throws while handling a part pass untouched.
 * `limits` replace the plugin's for this request (a route whose parts are larger than the scope's).
 * A field the plugin parsed as JSON (sent with `Content-Type: application/json`, as `curl -F
 * 'x={...};type=application/json'` does) comes back as its JSON text, like a JSON file part.
 */
export async function* formParts(req: FastifyRequest, errors: MultipartErrors, limits?: MultipartLimits): AsyncGenerator<FormPart> {
  let iterator: AsyncIterator<Multipart> | undefined;
  for (;;) {
    let part: FormPart;
    try {
      iterator ??= req.parts(limits && { limits })[Symbol.asyncIterator]();
      const next = await iterator.next();
      if (next.done) return;
      part = await readPart(next.value, errors);
    } catch (e) {
      throw refusal(e, errors);
    }
    yield part;
  }
}

async function readPart(part: Multipart, errors: MultipartErrors): Promise<FormPart> {
  // busboy hands over a part whose Content-Disposition names no field with an undefined name.
  if (typeof part.fieldname !== "string" || part.fieldname === "") throw errors.invalid("multipart body: a part has no name");
  if (part.type === "file") {
    return { field: part.fieldname, filename: part.filename || undefined, contentType: part.mimetype ?? "", content: await part.toBuffer() };
  }
  if (part.fieldnameTruncated) throw errors.invalid(`multipart body: a field name is longer than the limit (${part.fieldname}…)`);
  if (part.valueTruncated) throw errors.tooLarge(`multipart body is too large: the field "${part.fieldname}" is longer than the limit`);
  const value = part.value;
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return { field: part.fieldname, contentType: part.mimetype ?? "", content: Buffer.from(text, "utf8") };
}
