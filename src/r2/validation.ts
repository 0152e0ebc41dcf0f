import { BUCKET_NAME_RE, R2Codes, R2Error, R2Limits, type R2HttpMetadata } from "./store.js";

export function assertBucketName(name: string): void {
  if (!BUCKET_NAME_RE.test(name)) {
    throw new R2Error(
      400,
      R2Codes.invalidBucketName,
      `The bucket name "${name}" is invalid. Bucket names must begin and end with an alphanumeric character, only contain lowercase letters, numbers, and hyphens, and be between 3 and 63 characters long.`,
    );
  }
}

export function assertKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0) throw new R2Error(400, R2Codes.invalidObjectName, "The object key must not be empty");
  if (Buffer.byteLength(key) > R2Limits.maxKeyBytes) {
    throw new R2Error(400, R2Codes.invalidObjectName, `The object key is longer than ${R2Limits.maxKeyBytes} bytes`);
  }
}

export function assertCustomMetadata(meta: Record<string, string> | undefined): void {
  if (!meta) return;
  let bytes = 0;
  for (const [k, v] of Object.entries(meta)) {
    if (typeof v !== "string") throw new R2Error(400, R2Codes.invalidArgument, `custom metadata "${k}" must be a string`);
    bytes += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (bytes > R2Limits.maxCustomMetadataBytes) {
    throw new R2Error(400, R2Codes.metadataTooLarge, `Custom metadata is ${bytes} bytes; at most ${R2Limits.maxCustomMetadataBytes} are allowed`);
  }
}

const HTTP_FIELDS = ["contentType", "contentLanguage", "contentDisposition", "contentEncoding", "cacheControl"] as const;

/** Keeps only the known fields, with the right types; anything else is a 400 rather than stored garbage. */
export function cleanHttpMetadata(input: unknown): R2HttpMetadata {
  if (input === undefined || input === null) return {};
  if (typeof input !== "object") throw new R2Error(400, R2Codes.invalidArgument, "httpMetadata must be an object");
  const src = input as Record<string, unknown>;
  const out: R2HttpMetadata = {};
  for (const f of HTTP_FIELDS) {
    const v = src[f];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string") throw new R2Error(400, R2Codes.invalidArgument, `httpMetadata.${f} must be a string`);
    out[f] = v;
  }
  if (src.cacheExpiry !== undefined && src.cacheExpiry !== null) {
    const n = Number(src.cacheExpiry);
    if (!Number.isSafeInteger(n)) throw new R2Error(400, R2Codes.invalidArgument, "httpMetadata.cacheExpiry must be ms since the epoch");
    out.cacheExpiry = n;
  }
  return out;
}

export const STORAGE_CLASSES = ["Standard", "InfrequentAccess"] as const;

export function assertStorageClass(cls: string | undefined): string {
  if (cls === undefined) return "Standard";
  if (!(STORAGE_CLASSES as readonly string[]).includes(cls)) {
    throw new R2Error(400, R2Codes.invalidArgument, `Unknown storage class "${cls}"; use ${STORAGE_CLASSES.join(" or ")}`);
  }
  return cls;
}
