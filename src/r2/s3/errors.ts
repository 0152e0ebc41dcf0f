import { EdgeError } from "../../core/errors.js";
import { R2Codes } from "../errors.js";

/**
 * A refusal of the S3 API: an HTTP status, an S3 error code (`NoSuchKey`) and a message, plus the extra
 * elements S3 puts in its error document (Key, BucketName, ...). Rendered as S3's XML error by the handler.
 */
export class S3Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Extra elements of the XML error, in order (S3 names them, e.g. Key, BucketName, AWSAccessKeyId). */
    readonly details: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** Every S3 refusal the API answers, each written once. */
export const S3Errors = {
  // ---- authentication ----
  accessDenied: (message = "Access Denied") => new S3Error(403, "AccessDenied", message),
  requestExpired: () => new S3Error(403, "AccessDenied", "Request has expired"),
  requestNotYetValid: () => new S3Error(403, "AccessDenied", "Request is not valid yet"),
  invalidAccessKeyId: (accessKeyId: string) =>
    new S3Error(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.", { AWSAccessKeyId: accessKeyId }),
  signatureDoesNotMatch: () =>
    new S3Error(
      403,
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. Check your secret access key and signing method.",
    ),
  requestTimeTooSkewed: (requestTime: string) =>
    new S3Error(403, "RequestTimeTooSkewed", "The difference between the request time and the server's time is too large (more than 15 minutes).", {
      RequestTime: requestTime,
      ServerTime: new Date().toISOString(),
    }),
  authorizationHeaderMalformed: (why: string) => new S3Error(400, "AuthorizationHeaderMalformed", `The authorization header is malformed; ${why}`),
  authorizationQueryParametersError: (why: string) => new S3Error(400, "AuthorizationQueryParametersError", why),
  signatureV2: () => new S3Error(400, "InvalidRequest", "Signature Version 2 is not supported: sign requests with AWS4-HMAC-SHA256 (Signature Version 4)."),
  sessionTokens: () => new S3Error(400, "InvalidRequest", "Session tokens are not supported: sign with an API token's access key id and secret."),
  missingContentSha256: () => new S3Error(400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256"),
  invalidContentSha256: () => new S3Error(400, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-* or a hex SHA-256"),
  contentSha256Mismatch: () => new S3Error(400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed."),
  accountNotAddressed: (accounts: number) =>
    new S3Error(
      400,
      "InvalidRequest",
      `This access key reaches ${accounts} accounts: address one with the host <ACCOUNT_ID>.<s3 host> (see edgecli serve --s3-host).`,
    ),
  accountNotReached: () => new S3Error(403, "AccessDenied", "Access Denied: the access key has no R2 permission on this account"),

  // ---- what the API does not do ----
  notImplemented: (what: string) => new S3Error(501, "NotImplemented", `A header or query you provided requested a function that is not implemented: ${what}`),
  methodNotAllowed: (method: string) => new S3Error(405, "MethodNotAllowed", `The specified method is not allowed against this resource: ${method}`),

  // ---- buckets ----
  noSuchBucket: (bucket: string) => new S3Error(404, "NoSuchBucket", "The specified bucket does not exist", { BucketName: bucket }),
  bucketNotEmpty: (bucket: string) => new S3Error(409, "BucketNotEmpty", "The bucket you tried to delete is not empty", { BucketName: bucket }),
  bucketAlreadyOwnedByYou: (bucket: string) =>
    new S3Error(409, "BucketAlreadyOwnedByYou", "The bucket you tried to create already exists, and you own it.", { BucketName: bucket }),
  invalidBucketName: (bucket: string) => new S3Error(400, "InvalidBucketName", "The specified bucket is not valid.", { BucketName: bucket }),
  invalidLocationConstraint: (location: string) => new S3Error(400, "InvalidLocationConstraint", `The specified location-constraint is not valid: ${location}`),
  noSuchCorsConfiguration: (bucket: string) => new S3Error(404, "NoSuchCORSConfiguration", "The CORS configuration does not exist", { BucketName: bucket }),
  corsForbidden: () => new S3Error(403, "AccessForbidden", "CORSResponse: This CORS request is not allowed."),
  corsPreflightIncomplete: () =>
    new S3Error(400, "BadRequest", "Insufficient information. Origin request header and Access-Control-Request-Method are needed."),

  // ---- objects ----
  noSuchKey: (key: string) => new S3Error(404, "NoSuchKey", "The specified key does not exist.", { Key: key }),
  keyTooLong: () => new S3Error(400, "KeyTooLongError", "Your key is too long (at most 1,024 bytes)."),
  invalidArgument: (message: string, name?: string, value?: string) =>
    new S3Error(400, "InvalidArgument", message, name === undefined ? {} : { ArgumentName: name, ArgumentValue: value ?? "" }),
  invalidRequest: (message: string) => new S3Error(400, "InvalidRequest", message),
  badDigest: (what = "Content-MD5") => new S3Error(400, "BadDigest", `The ${what} you specified did not match what we received.`),
  invalidDigest: () => new S3Error(400, "InvalidDigest", "The Content-MD5 you specified is not valid."),
  invalidChecksum: (header: string) => new S3Error(400, "InvalidRequest", `Value for ${header} header is invalid.`),
  incompleteBody: () => new S3Error(400, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header."),
  missingContentLength: () => new S3Error(411, "MissingContentLength", "You must provide the Content-Length HTTP header."),
  entityTooLarge: (message: string) => new S3Error(400, "EntityTooLarge", message),
  entityTooSmall: (message: string) => new S3Error(400, "EntityTooSmall", message),
  metadataTooLarge: (message: string) => new S3Error(400, "MetadataTooLarge", message),
  invalidStorageClass: (cls: string) => new S3Error(400, "InvalidStorageClass", `The storage class you specified is not valid: ${cls}`),
  preconditionFailed: (condition: string) =>
    new S3Error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold", { Condition: condition }),
  invalidRange: (size: number) => new S3Error(416, "InvalidRange", "The requested range is not satisfiable", { ActualObjectSize: String(size) }),
  copyToItself: () =>
    new S3Error(
      400,
      "InvalidRequest",
      "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
    ),
  malformedXml: () => new S3Error(400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."),
  xmlTooLarge: (limit: number) => new S3Error(400, "MaxMessageLengthExceeded", `Your request was too big: XML bodies take at most ${limit} bytes.`),

  // ---- multipart ----
  noSuchUpload: (uploadId: string) =>
    new S3Error(
      404,
      "NoSuchUpload",
      "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
      {
        UploadId: uploadId,
      },
    ),
  invalidPart: (message: string) => new S3Error(400, "InvalidPart", message),
  invalidPartOrder: () =>
    new S3Error(400, "InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number."),

  internal: (requestId: string) => new S3Error(500, "InternalError", `We encountered an internal error. Please try again. (request id ${requestId})`),
  /** PostgreSQL or the object store behind this node is unreachable (distributed mode): S3 clients retry a 503. */
  dependencyUnavailable: (dependency: string) =>
    new S3Error(503, "ServiceUnavailable", `The service is unavailable: ${dependency} cannot be reached. Please reduce your request rate and retry.`),
};

const r2CodeSet: ReadonlySet<number> = new Set(Object.values(R2Codes));

/**
 * The code of a refusal raised by the R2 store (an EdgeError from R2Errors); undefined for anything else, core's
 * refusals included, so that only the store's refusals are translated.
 */
function storeCodeOf(err: unknown): number | undefined {
  const code = err instanceof EdgeError ? err.errors[0]?.code : undefined;
  return code !== undefined && r2CodeSet.has(code) ? code : undefined;
}

/** A store refusal as the S3 error it means; undefined for anything that is not a store refusal. */
export function fromStoreError(err: unknown, at: { bucket?: string; key?: string; uploadId?: string }): S3Error | undefined {
  const code = storeCodeOf(err);
  if (code === undefined) return undefined;
  const message = (err as Error).message;
  switch (code) {
    case R2Codes.bucketNotFound:
      return S3Errors.noSuchBucket(at.bucket ?? "");
    case R2Codes.objectNotFound:
      return S3Errors.noSuchKey(at.key ?? "");
    case R2Codes.bucketAlreadyExists:
      return S3Errors.bucketAlreadyOwnedByYou(at.bucket ?? "");
    case R2Codes.invalidBucketName:
      return S3Errors.invalidBucketName(at.bucket ?? "");
    case R2Codes.bucketNotEmpty:
      return S3Errors.bucketNotEmpty(at.bucket ?? "");
    case R2Codes.noSuchUpload:
      return S3Errors.noSuchUpload(at.uploadId ?? "");
    case R2Codes.invalidPart:
      return S3Errors.invalidPart(message);
    case R2Codes.entityTooSmall:
      return S3Errors.entityTooSmall(message);
    case R2Codes.entityTooLarge:
      return S3Errors.entityTooLarge(message);
    case R2Codes.metadataTooLarge:
      return S3Errors.metadataTooLarge(message);
    case R2Codes.invalidObjectName:
      return /longer/.test(message) ? S3Errors.keyTooLong() : S3Errors.invalidArgument(message);
    case R2Codes.preconditionFailed:
      return S3Errors.preconditionFailed("If-Match");
    case R2Codes.invalidDigest:
      return S3Errors.badDigest();
    case R2Codes.invalidRange:
      return new S3Error(416, "InvalidRange", "The requested range is not satisfiable");
    case R2Codes.internal:
      return undefined;
    default:
      return S3Errors.invalidArgument(message);
  }
}
