import type { IncomingHttpHeaders } from "node:http";
import { HTTP_METADATA_HEADERS, type HttpMetadataField } from "../objects/http-metadata-headers.js";
import type { R2HttpMetadata, R2ObjectInfo } from "../store.js";
import { S3Errors } from "./errors.js";
import { headerText, headerValue } from "./header-text.js";

/**
 * Object metadata between S3 headers and the R2 store: the HTTP metadata (Content-Type ... Expires), custom
 * metadata (x-amz-meta-*), storage classes, and the headers an object is served with. The same fields the v4 API
 * and the worker binding read and write, so an object keeps its metadata whichever way it went in or out.
 */

const STORAGE_CLASSES: ReadonlyMap<string, string> = new Map([
  ["STANDARD", "Standard"],
  ["STANDARD_IA", "InfrequentAccess"],
]);

/** x-amz-storage-class as R2's storage class; undefined when absent; InvalidStorageClass for others. */
export function storageClassFrom(headers: IncomingHttpHeaders): string | undefined {
  const v = headers["x-amz-storage-class"];
  if (typeof v !== "string") return undefined;
  const cls = STORAGE_CLASSES.get(v);
  if (!cls) throw S3Errors.invalidStorageClass(v);
  return cls;
}

/** R2's storage class as S3 names it. */
export function s3StorageClass(cls: string): string {
  for (const [s3, r2] of STORAGE_CLASSES) if (r2 === cls) return s3;
  return "STANDARD";
}

/** The HTTP metadata of a PutObject or CreateMultipartUpload (aws-chunked is transport, never stored). */
export function httpMetadataFrom(headers: IncomingHttpHeaders): R2HttpMetadata {
  const meta: R2HttpMetadata = {};
  for (const [field, header] of Object.entries(HTTP_METADATA_HEADERS) as [HttpMetadataField, string][]) {
    const v = headers[header];
    if (typeof v === "string" && v !== "") meta[field] = headerText(v);
  }
  if (meta.contentEncoding !== undefined) {
    const codings = meta.contentEncoding
      .split(",")
      .map((c) => c.trim())
      .filter((c) => c !== "" && c.toLowerCase() !== "aws-chunked");
    if (codings.length > 0) meta.contentEncoding = codings.join(", ");
    else delete meta.contentEncoding;
  }
  const expires = headers.expires;
  if (typeof expires === "string" && expires !== "") {
    const t = Date.parse(expires);
    if (!Number.isFinite(t)) throw S3Errors.invalidArgument("Expires must be an HTTP date", "Expires", expires);
    meta.cacheExpiry = t;
  }
  return meta;
}

/** x-amz-meta-* headers as custom metadata (names lower-case, as HTTP header names are case-insensitive). */
export function customMetadataFrom(headers: IncomingHttpHeaders): Record<string, string> {
  const meta: Record<string, string> = Object.create(null);
  for (const [header, value] of Object.entries(headers)) {
    if (!header.startsWith("x-amz-meta-") || value === undefined) continue;
    const name = header.slice("x-amz-meta-".length);
    if (name === "") throw S3Errors.invalidArgument("A metadata header needs a name after x-amz-meta-", header, "");
    meta[name] = headerText(Array.isArray(value) ? value.join(",") : value);
  }
  return meta;
}

/** The headers an object is served with by GetObject and HeadObject. */
export function objectHeaders(o: R2ObjectInfo): Record<string, string> {
  const h: Record<string, string> = {
    etag: `"${o.etag}"`,
    "last-modified": new Date(o.uploaded).toUTCString(),
    "accept-ranges": "bytes",
    "content-type": headerValue(o.httpMetadata.contentType ?? "application/octet-stream"),
  };
  const m = o.httpMetadata;
  if (m.contentLanguage) h["content-language"] = headerValue(m.contentLanguage);
  if (m.contentDisposition) h["content-disposition"] = headerValue(m.contentDisposition);
  if (m.contentEncoding) h["content-encoding"] = headerValue(m.contentEncoding);
  if (m.cacheControl) h["cache-control"] = headerValue(m.cacheControl);
  if (m.cacheExpiry !== undefined) h.expires = new Date(m.cacheExpiry).toUTCString();
  for (const [name, value] of Object.entries(o.customMetadata)) {
    // A name written through the binding may hold characters no header name can; such entries are not shown here.
    if (/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) h[`x-amz-meta-${name.toLowerCase()}`] = headerValue(value);
  }
  if (o.storageClass !== "Standard") h["x-amz-storage-class"] = s3StorageClass(o.storageClass);
  return h;
}

/** GetObject's response-* query parameters: the response headers they replace. */
const RESPONSE_OVERRIDES = {
  "response-content-type": "content-type",
  "response-content-language": "content-language",
  "response-expires": "expires",
  "response-cache-control": "cache-control",
  "response-content-disposition": "content-disposition",
  "response-content-encoding": "content-encoding",
} as const;

export function responseOverrides(query: ReadonlyMap<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [param, header] of Object.entries(RESPONSE_OVERRIDES)) {
    const v = query.get(param);
    if (v !== undefined) out[header] = headerValue(v);
  }
  return out;
}

/** Headers asking for what objects here do not have: refused rather than silently ignored. */
const UNSUPPORTED_OBJECT_HEADERS = [
  "x-amz-server-side-encryption",
  "x-amz-server-side-encryption-customer-algorithm",
  "x-amz-server-side-encryption-aws-kms-key-id",
  "x-amz-tagging",
  "x-amz-object-lock-mode",
  "x-amz-object-lock-retain-until-date",
  "x-amz-object-lock-legal-hold",
  "x-amz-website-redirect-location",
  "x-amz-grant-read",
  "x-amz-grant-read-acp",
  "x-amz-grant-write-acp",
  "x-amz-grant-full-control",
];
/** Canned ACLs that say what every object here already is: private to the account. */
const ACCEPTED_ACLS = new Set(["private", "bucket-owner-full-control"]);

export function refuseUnsupportedHeaders(headers: IncomingHttpHeaders): void {
  for (const h of UNSUPPORTED_OBJECT_HEADERS) if (headers[h] !== undefined) throw S3Errors.notImplemented(h);
  const acl = headers["x-amz-acl"];
  if (typeof acl === "string" && !ACCEPTED_ACLS.has(acl)) throw S3Errors.notImplemented(`x-amz-acl: ${acl} (objects and buckets are private)`);
}
