import { EdgeError } from "../core/errors.js";
import type { TooLarge } from "../core/http/body.js";
import type { MultipartErrors } from "../core/http/multipart.js";
import { KV_LIMITS } from "./limits.js";

/**
 * KV error codes. 10009/10013/10014 are the ones the hosted API and wrangler use; the validation codes are our own,
 * one per rule, so a client can tell the rules apart without parsing messages.
 */
export const KvCodes = {
  badRequest: 10001,
  keyNotFound: 10009,
  namespaceNotFound: 10013,
  titleExists: 10014,
  metadataTooLarge: 10018,
  invalidTitle: 10019,
  invalidKey: 10020,
  invalidExpiration: 10024,
  invalidTtl: 10025,
  tooManyEntries: 10026,
  invalidLimit: 10027,
  invalidMetadata: 10028,
  valueTooLarge: 10029,
  invalidCursor: 10030,
  keyTooLong: 10033,
  /** The hosted API's code for 429, "Please wait and consider throttling your request speed". */
  throttled: 971,
} as const;

const badRequest = (message: string) => new EdgeError(400, KvCodes.badRequest, message);
const whole = (v: unknown) => String(v);

/** KV's refusals. Every message is written here once; the store, the routes, the binding and the CLI throw these. */
export const KvErrors = {
  // ---- namespaces ----
  namespaceNotFound: () => new EdgeError(404, KvCodes.namespaceNotFound, "namespace not found"),
  titleExists: (title: string) => new EdgeError(400, KvCodes.titleExists, `a namespace with the title "${title}" already exists`),
  titleEmpty: () => new EdgeError(400, KvCodes.invalidTitle, "title must be a non-empty string"),
  titleTooLong: () => new EdgeError(400, KvCodes.invalidTitle, `title must be at most ${KV_LIMITS.titleBytes} bytes`),
  /** A create or rename body without a usable `title`. */
  titleMissing: () => new EdgeError(400, KvCodes.invalidTitle, "body must be JSON with a non-empty string title"),
  namespaceIdInvalid: () => badRequest(`namespace id must be 1-${KV_LIMITS.namespaceIdChars} characters`),

  // ---- keys ----
  keyNotFound: () => new EdgeError(404, KvCodes.keyNotFound, "get: 'key not found'"),
  keyEmpty: () => new EdgeError(400, KvCodes.invalidKey, "key must not be empty"),
  keyReserved: (key: "." | "..") => new EdgeError(400, KvCodes.invalidKey, `key must not be "${key}"`),
  keyNotString: () => new EdgeError(400, KvCodes.invalidKey, "key must be a string"),
  keyTooLong: (bytes: number) => new EdgeError(414, KvCodes.keyTooLong, `key is ${bytes} bytes long, the limit is ${KV_LIMITS.keyBytes} bytes`),
  keyNotPercentEncoded: () => new EdgeError(400, KvCodes.invalidKey, "key is not valid percent-encoding"),

  // ---- values and metadata ----
  valueNotBytes: () => badRequest("value must be bytes"),
  valueTooLarge: (bytes: number) => new EdgeError(413, KvCodes.valueTooLarge, `value is ${bytes} bytes, the limit is ${KV_LIMITS.valueBytes} bytes (25 MiB)`),
  /** The refusal for a body read past its limit (core/http/body.ts); `what` names it ("value", "bulk get body"). */
  bodyTooLarge:
    (what: string): TooLarge =>
    (limit, size) =>
      new EdgeError(
        413,
        KvCodes.valueTooLarge,
        `${what} is too large: the limit is ${limit} bytes, got ${size === undefined ? "more than that" : `${size} bytes`}`,
      ),
  metadataNotJson: () => new EdgeError(400, KvCodes.invalidMetadata, "metadata must serialize to JSON"),
  metadataTooLarge: (bytes: number) =>
    new EdgeError(413, KvCodes.metadataTooLarge, `metadata is ${bytes} bytes serialized, the limit is ${KV_LIMITS.metadataBytes} bytes`),
  /** `where` names the carrier: `the "metadata" part`, `CF-KV-Metadata`. */
  metadataUnparsable: (where: string, detail: string) => new EdgeError(400, KvCodes.invalidMetadata, `${where} is not valid JSON: ${detail}`),
  /** Multipart value writes: the body's framing or size (core/http/multipart.ts). */
  multipart: {
    invalid: badRequest,
    tooLarge: (message: string) => new EdgeError(413, KvCodes.valueTooLarge, message),
  } satisfies MultipartErrors,
  noValuePart: () => badRequest('multipart body has no "value" part'),

  // ---- expiration ----
  ttlNotWhole: (given: unknown) => new EdgeError(400, KvCodes.invalidTtl, `expiration_ttl must be a whole number of seconds, got ${whole(given)}`),
  ttlTooShort: (ttl: number) => new EdgeError(400, KvCodes.invalidTtl, `expiration_ttl of ${ttl} is below the minimum of ${KV_LIMITS.minTtlSeconds} seconds`),
  expirationNotWhole: (given: unknown) =>
    new EdgeError(400, KvCodes.invalidExpiration, `expiration must be a whole number of UNIX seconds, got ${whole(given)}`),
  expirationTooSoon: (expiration: number, nowSeconds: number) => {
    const why = expiration <= nowSeconds ? "is in the past" : `is less than ${KV_LIMITS.minTtlSeconds} seconds from now`;
    return new EdgeError(
      400,
      KvCodes.invalidExpiration,
      `expiration ${expiration} ${why}; it must be at least ${KV_LIMITS.minTtlSeconds} seconds in the future`,
    );
  },
  /** A query parameter (`expiration`, `expiration_ttl`) that is not a number. */
  notANumber: (name: "expiration" | "expiration_ttl", raw: string) =>
    new EdgeError(400, name === "expiration" ? KvCodes.invalidExpiration : KvCodes.invalidTtl, `${name} must be a number, got ${JSON.stringify(raw)}`),

  // ---- listing ----
  invalidLimit: (given: unknown) =>
    new EdgeError(400, KvCodes.invalidLimit, `limit must be a whole number from 1 to ${KV_LIMITS.listLimit}, got ${whole(given)}`),
  invalidCursor: () => new EdgeError(400, KvCodes.invalidCursor, "cursor is not one this server issued"),
  invalidChoice: (name: string, allowed: readonly string[]) => badRequest(`${name} must be one of ${allowed.join(", ")}`),

  // ---- bulk ----
  tooManyEntries: (count: number) =>
    new EdgeError(413, KvCodes.tooManyEntries, `a bulk write holds at most ${KV_LIMITS.bulkWriteEntries} entries, got ${count}`),
  tooManyKeysToDelete: (count: number) =>
    new EdgeError(413, KvCodes.tooManyEntries, `a bulk delete holds at most ${KV_LIMITS.bulkWriteEntries} keys, got ${count}`),
  tooManyKeysToGet: (count: number) => new EdgeError(400, KvCodes.tooManyEntries, `bulk get takes at most ${KV_LIMITS.bulkGetKeys} keys, got ${count}`),
  /** An element of a bulk write that is not a well-formed entry; `rule` says which rule it broke. */
  badEntry: (index: number, rule: string) => badRequest(`entry ${index}: ${rule}`),
  bodyNotArray: () => badRequest("the body must be a JSON array"),
  /** The client stopped sending (or its connection failed) before the end of a streamed body. */
  bodyUnreadable: (reason: string) => badRequest(`the request body could not be read: ${reason}`),
  bulkGetKeysInvalid: () => badRequest("keys must be an array of key strings"),
  bulkGetTypeInvalid: (type: unknown) => badRequest(`type must be "text" or "json", got ${JSON.stringify(type)}`),
  bulkGetValueNotJson: (key: string, detail: string) => badRequest(`the value of ${JSON.stringify(key)} is not JSON: ${detail}`),
  bulkGetBodyNotJson: (detail: string) => badRequest(`bulk get body must be JSON: ${detail}`),
  throttled: () => new EdgeError(429, KvCodes.throttled, "Please wait and consider throttling your request speed: too many large bulk writes are under way"),

  // ---- the worker binding ----
  methodNotAllowed: (method: string) => new EdgeError(405, KvCodes.badRequest, `method ${method} is not part of the KV binding protocol`),

  /** `err` about one item of a list, named by `item` ("entry 3", "keys[3]"): the same refusal, prefixed. */
  inItem: (item: string, err: EdgeError) => new EdgeError(err.status, err.errors[0]!.code, `${item}: ${err.message}`),
};
