import { EdgeError } from "../core/errors.js";
import { R2Limits } from "./limits.js";

/**
 * The codes R2 reports. The v4 API answers with them in `errors[].code`; the workerd binding in `cf-r2-error`'s
 * `v4code`, which workerd turns into the script's exception, so the binding's are the ones workerd understands.
 */
export const R2Codes = {
  internal: 10001,
  bucketNotFound: 10006,
  objectNotFound: 10007,
  bucketAlreadyExists: 10004,
  invalidBucketName: 10005,
  bucketNotEmpty: 10008,
  entityTooSmall: 10011,
  metadataTooLarge: 10012,
  invalidObjectName: 10020,
  invalidMaxKeys: 10022,
  noSuchUpload: 10024,
  invalidPart: 10025,
  invalidArgument: 10029,
  preconditionFailed: 10031,
  invalidDigest: 10037,
  invalidRange: 10039,
  entityTooLarge: 100100,
  /** The event notification API's own codes, as the hosted one answers (workers.api.error.*). */
  notificationBucketNotFound: 10085,
  invalidNotificationConfig: 11014,
  notificationQueueNotFound: 11000,
} as const;

const invalidArgument = (message: string, status = 400) => new EdgeError(status, R2Codes.invalidArgument, message);
const invalidPart = (message: string) => new EdgeError(400, R2Codes.invalidPart, message);

/**
 * R2's refusals, one factory each; every message is written here once. The store raises them, and the v4 API, the
 * workerd binding and the CLI show them through core's renderer.
 */
export const R2Errors = {
  /** A bug, as the binding reports it (workerd reads the code); the v4 API answers core's internal error instead. */
  internal: () => new EdgeError(500, R2Codes.internal, "We encountered an internal error. Please try again."),

  // ---- buckets ----
  bucketNotFound: () => new EdgeError(404, R2Codes.bucketNotFound, "The specified bucket does not exist."),
  bucketAlreadyExists: () => new EdgeError(409, R2Codes.bucketAlreadyExists, "The bucket you tried to create already exists, and you own it."),
  invalidBucketName: (name: string) =>
    new EdgeError(
      400,
      R2Codes.invalidBucketName,
      `The bucket name "${name}" is invalid. Bucket names must begin and end with an alphanumeric character, only contain lowercase letters, numbers, and hyphens, and be between 3 and 63 characters long.`,
    ),
  bucketNotEmpty: () => new EdgeError(409, R2Codes.bucketNotEmpty, "The bucket you tried to delete is not empty."),
  /** The hosted API keeps EU and FedRAMP buckets apart by this header; here there is one place, so only `default` is true. */
  jurisdictionUnsupported: (value: string) =>
    invalidArgument(
      `cf-r2-jurisdiction: jurisdiction "${value.slice(0, 40)}" is not supported here (no data-residency guarantee is made: buckets live in this platform's storage); only "default" is accepted`,
    ),
  unknownStorageClass: (cls: string, known: readonly string[]) => invalidArgument(`Unknown storage class "${cls.slice(0, 40)}"; use ${known.join(" or ")}`),
  storageClassHeaderRequired: () =>
    invalidArgument("cf-r2-storage-class: the header naming the bucket's new default storage class (Standard or InfrequentAccess) is required"),

  /** A query of R2's analytics dataset that cannot be answered as asked (analytics-dataset.ts). */
  analyticsFilter: (message: string) => invalidArgument(message),
  lifecycleUnsupported: () =>
    invalidArgument(
      "Object lifecycle rules are not supported here: this platform never expires objects, moves them between storage classes or aborts uploads on a schedule, so a bucket has no lifecycle rules (delete objects and abort uploads yourself)",
    ),

  // ---- objects ----
  objectNotFound: () => new EdgeError(404, R2Codes.objectNotFound, "The specified key does not exist."),
  emptyKey: () => new EdgeError(400, R2Codes.invalidObjectName, "The object key must not be empty"),
  keyWithNul: () => new EdgeError(400, R2Codes.invalidObjectName, "Object keys, prefixes and names cannot hold the character U+0000 on this server"),
  keyTooLong: () => new EdgeError(400, R2Codes.invalidObjectName, `The object key is longer than ${R2Limits.maxKeyBytes} bytes`),
  metadataTooLarge: (bytes: number) =>
    new EdgeError(400, R2Codes.metadataTooLarge, `Custom metadata is ${bytes} bytes; at most ${R2Limits.maxCustomMetadataBytes} are allowed`),
  metadataNotString: (name: string) => invalidArgument(`custom metadata "${name}" must be a string`),
  httpMetadataNotObject: () => invalidArgument("httpMetadata must be an object"),
  httpFieldNotString: (field: string) => invalidArgument(`httpMetadata.${field} must be a string`),
  invalidCacheExpiry: () => invalidArgument("httpMetadata.cacheExpiry must be ms since the epoch"),
  invalidExpires: () => invalidArgument("The Expires header is not a valid HTTP date"),
  preconditionFailed: () => new EdgeError(412, R2Codes.preconditionFailed, "At least one of the pre-conditions you specified did not hold."),
  objectTooLarge: () =>
    new EdgeError(
      400,
      R2Codes.entityTooLarge,
      `The object is larger than the ${R2Limits.maxObjectBytes} bytes a single upload may hold; use a multipart upload`,
    ),
  sizeMismatch: (received: number, announced: number) => invalidArgument(`The body has ${received} bytes but ${announced} were announced`),
  digestMismatch: (algorithm: string) =>
    new EdgeError(400, R2Codes.invalidDigest, `The ${algorithm.toUpperCase()} checksum you specified did not match what we received.`),
  tooManyKeys: () => invalidArgument(`At most ${R2Limits.maxDeleteKeys} keys can be deleted at once`),
  rangeNotSatisfiable: () => new EdgeError(416, R2Codes.invalidRange, "The requested range is not satisfiable"),
  /** A range field that is not a non-negative integer (`field`: "suffix", "offset", "length"). */
  invalidRangeField: (field: string) => invalidArgument(`range ${field} must be a non-negative integer`),

  // ---- listings ----
  invalidListLimit: () => new EdgeError(400, R2Codes.invalidMaxKeys, `limit must be an integer between 1 and ${R2Limits.maxListLimit}`),
  invalidCursor: () => invalidArgument("The list cursor is not valid"),
  invalidPerPage: () => invalidArgument("per_page must be an integer between 1 and 1000"),
  invalidPartNumberMarker: () => invalidArgument("The part number marker must be a non-negative integer"),

  // ---- bucket CORS ----
  corsRuleCount: () => invalidArgument(`A bucket takes 1 to ${R2Limits.maxCorsRules} CORS rules`),

  // ---- event notifications ----
  notificationBucketNotFound: () => new EdgeError(404, R2Codes.notificationBucketNotFound, "The specified bucket does not exist."),
  notificationQueueNotFound: () => new EdgeError(404, R2Codes.notificationQueueNotFound, "Queue does not exist in this account"),
  invalidNotificationConfig: (detail: string) => new EdgeError(400, R2Codes.invalidNotificationConfig, `Invalid event notification configuration: ${detail}`),
  tooManyNotificationRules: () =>
    new EdgeError(400, R2Codes.invalidNotificationConfig, `Invalid event notification configuration: a bucket takes at most 100 rules`),
  notificationRuleNotFound: (ruleId: string) =>
    new EdgeError(
      404,
      R2Codes.invalidNotificationConfig,
      `Invalid event notification configuration: the queue has no rule ${ruleId.slice(0, 64)} on this bucket`,
    ),
  overlappingNotificationRules: (ruleId: string) =>
    new EdgeError(
      400,
      R2Codes.invalidNotificationConfig,
      `Invalid event notification configuration: the rule overlaps rule ${ruleId} (same action, and one key could match both prefixes and suffixes)`,
    ),

  // ---- multipart uploads ----
  noSuchUpload: () => new EdgeError(404, R2Codes.noSuchUpload, "The specified multipart upload does not exist."),
  partNumberOutOfRange: () => invalidPart(`partNumber must be an integer between 1 and ${R2Limits.maxParts}`),
  noParts: () => invalidPart("At least one part must be listed"),
  partsOutOfOrder: () => invalidPart("Parts must be listed in ascending order, each once"),
  partMismatch: (partNumber: number) => invalidPart(`Part ${partNumber} was not uploaded or its etag does not match`),
  partTooSmall: (partNumber: number, size: number) =>
    new EdgeError(400, R2Codes.entityTooSmall, `Part ${partNumber} is ${size} bytes; every part but the last needs at least ${R2Limits.minPartBytes}`),

  // ---- requests (the v4 API's small JSON bodies, the binding's protocol) ----
  requestTooLarge: () => invalidArgument("The request body is too large", 413),
  requestNotJson: (detail: string) => invalidArgument(`The request body is not valid JSON: ${detail}`),
  /** A binding call workerd would not send: `detail` says what is wrong with it. */
  malformedCall: (detail: string) => invalidArgument(detail),
  methodNotAllowed: (method: string | undefined) => invalidArgument(`method ${method} is not part of the R2 binding protocol`, 405),
};
