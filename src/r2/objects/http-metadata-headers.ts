import type { R2HttpMetadata } from "../store.js";

/**
 * The request header each string field of R2HttpMetadata is read from (the v4 API's object PUT and S3's PutObject
 * share it). cacheExpiry comes from Expires, a date each reader parses itself.
 */
export const HTTP_METADATA_HEADERS = {
  contentType: "content-type",
  contentLanguage: "content-language",
  contentDisposition: "content-disposition",
  contentEncoding: "content-encoding",
  cacheControl: "cache-control",
} as const satisfies Record<Exclude<keyof R2HttpMetadata, "cacheExpiry">, string>;

export type HttpMetadataField = keyof typeof HTTP_METADATA_HEADERS;
