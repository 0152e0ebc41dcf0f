import { createHash, createHmac, timingSafeEqual, type Hash, type Hmac } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { SignatureV4 } from "@smithy/signature-v4";
import { S3Errors } from "./errors.js";
import { headerBytesAsText } from "./header-text.js";

/**
 * AWS Signature Version 4 as S3 checks it: in the Authorization header, in the query of a presigned URL, and
 * chunk by chunk in an aws-chunked body. @smithy/signature-v4 (the AWS SDK's signer) only signs; verifying is
 * signing the request again as received, with the secret we hold, and comparing in constant time. The canonical
 * request, the key derivation and the HMACs are all the library's.
 */

export const UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/** aws-chunked bodies: each chunk signed; the same with signed trailing checksums; or neither, with a trailer. */
export const STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
export const STREAMING_SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER";
export const STREAMING_UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
const STREAMING_MODES = new Set([STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER]);

const ALGORITHM = "AWS4-HMAC-SHA256";
/** R2 signs in region `auto`, and accepts us-east-1 (what SDKs default to) and an empty region. */
export const ACCEPTED_REGIONS: ReadonlySet<string> = new Set(["auto", "us-east-1", ""]);
export const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000;
export const MAX_PRESIGN_SECONDS = 7 * 24 * 60 * 60;

const HEX64 = /^[0-9a-f]{64}$/;
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
const HEADER_NAME = /^[a-z0-9-]+$/;

/** What a request's signature claims: who signed, when, over which headers, and how its body is covered. */
export interface SignedRequest {
  style: "header" | "query";
  accessKeyId: string;
  region: string;
  signedHeaders: string[];
  signature: string;
  /** X-Amz-Date, e.g. 20260101T120000Z */
  amzDate: string;
  signingTime: Date;
  /** Presigned URLs: seconds the signature is valid for. */
  expiresSeconds?: number;
  /** A hex SHA-256 of the body, UNSIGNED-PAYLOAD, or one of the STREAMING-* modes. */
  payloadHash: string;
}

/** The query of a request as decoded (name, value) pairs, in order. */
export type QueryPairs = readonly (readonly [string, string])[];

const decode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/** Splits a raw query string into decoded pairs (`?uploads` is ["uploads", ""]). */
export function parseQuery(raw: string): [string, string][] {
  if (!raw) return [];
  return raw
    .split("&")
    .filter(Boolean)
    .map((part) => {
      const eq = part.indexOf("=");
      return eq < 0 ? [decode(part), ""] : [decode(part.slice(0, eq)), decode(part.slice(eq + 1))];
    });
}

const queryValue = (query: QueryPairs, name: string) => query.find(([k]) => k === name)?.[1];

function parseAmzDate(value: string | undefined, malformed: (why: string) => Error): Date {
  const m = value ? AMZ_DATE.exec(value) : null;
  if (!m) throw malformed("X-Amz-Date must be a date like 20260101T120000Z");
  return new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
}

/** Credential=<id>/<yyyymmdd>/<region>/s3/aws4_request, checked against X-Amz-Date. */
function parseCredential(credential: string | undefined, amzDate: string, malformed: (why: string) => Error) {
  const parts = credential?.split("/") ?? [];
  if (parts.length !== 5 || !parts[0] || parts[4] !== "aws4_request") {
    throw malformed("the Credential must be <access key id>/<date>/<region>/s3/aws4_request");
  }
  const [accessKeyId, date, region, service] = parts;
  if (date !== amzDate.slice(0, 8)) throw malformed(`the credential date ${date} is not the date of X-Amz-Date ${amzDate}`);
  if (!ACCEPTED_REGIONS.has(region)) throw malformed(`the region '${region}' is wrong; expecting 'auto'`);
  if (service !== "s3") throw malformed(`the service '${service}' is wrong; expecting 's3'`);
  return { accessKeyId, region };
}

function parseSignedHeaders(list: string | undefined, malformed: (why: string) => Error): string[] {
  const names = list?.split(";") ?? [];
  if (names.length === 0 || !names.every((n) => HEADER_NAME.test(n))) throw malformed("SignedHeaders must list lowercase header names separated by ';'");
  if (!names.includes("host")) throw malformed("the host header must be signed");
  return names;
}

function checkPayloadHash(value: string): string {
  if (value === UNSIGNED_PAYLOAD || HEX64.test(value) || STREAMING_MODES.has(value)) return value;
  if (value.startsWith("STREAMING-")) throw S3Errors.notImplemented(`x-amz-content-sha256: ${value}`);
  throw S3Errors.invalidContentSha256();
}

/**
 * Reads the SigV4 claims of a request; undefined when it carries no signature at all. Malformed claims,
 * clock skew and expired presigned URLs are refused here, before any secret is looked up.
 */
export function readSignature(req: IncomingMessage, query: QueryPairs, now = Date.now()): SignedRequest | undefined {
  const authorization = req.headers.authorization;
  const presigned = queryValue(query, "X-Amz-Algorithm") !== undefined;
  if (query.some(([k]) => k === "AWSAccessKeyId") || authorization?.startsWith("AWS ")) throw S3Errors.signatureV2();
  if (!authorization?.startsWith(ALGORITHM) && !presigned) return undefined;
  if (authorization && presigned)
    throw S3Errors.invalidArgument("Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the Authorization header should be specified");
  if (req.headers["x-amz-security-token"] !== undefined || queryValue(query, "X-Amz-Security-Token") !== undefined) throw S3Errors.sessionTokens();
  const signed = authorization ? fromHeader(req, authorization, now) : fromQuery(query, now);
  // Every x-amz-* header says something about the request (metadata, copy source, checksums): as in S3, none may
  // ride along unsigned.
  const unsigned = Object.keys(req.headers).filter((h) => h.startsWith("x-amz-") && !signed.signedHeaders.includes(h));
  if (unsigned.length > 0) throw S3Errors.accessDenied(`There were headers present in the request which were not signed: ${unsigned.join(", ")}`);
  return signed;
}

function fromHeader(req: IncomingMessage, authorization: string, now: number): SignedRequest {
  const malformed = S3Errors.authorizationHeaderMalformed;
  const m = /^AWS4-HMAC-SHA256\s+(.*)$/s.exec(authorization);
  if (!m) throw malformed("the algorithm must be AWS4-HMAC-SHA256");
  const fields = new Map<string, string>();
  for (const part of m[1].split(",")) {
    const eq = part.indexOf("=");
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const amzDateHeader = req.headers["x-amz-date"];
  if (typeof amzDateHeader !== "string") throw S3Errors.accessDenied("AWS authentication requires a valid x-amz-date header");
  const signingTime = parseAmzDate(amzDateHeader, malformed);
  const { accessKeyId, region } = parseCredential(fields.get("Credential"), amzDateHeader, malformed);
  const signedHeaders = parseSignedHeaders(fields.get("SignedHeaders"), malformed);
  const signature = fields.get("Signature") ?? "";
  if (!HEX64.test(signature)) throw malformed("the Signature must be 64 hex digits");
  const contentSha256 = req.headers["x-amz-content-sha256"];
  if (typeof contentSha256 !== "string") throw S3Errors.missingContentSha256();
  if (Math.abs(now - signingTime.getTime()) > MAX_CLOCK_SKEW_MS) throw S3Errors.requestTimeTooSkewed(amzDateHeader);
  return { style: "header", accessKeyId, region, signedHeaders, signature, amzDate: amzDateHeader, signingTime, payloadHash: checkPayloadHash(contentSha256) };
}

function fromQuery(query: QueryPairs, now: number): SignedRequest {
  const malformed = (why: string) => S3Errors.authorizationQueryParametersError(`Error parsing the X-Amz-Credential parameter; ${why}`);
  const get = (name: string) => queryValue(query, name);
  if (get("X-Amz-Algorithm") !== ALGORITHM) throw S3Errors.authorizationQueryParametersError('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  for (const name of ["X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"]) {
    if (get(name) === undefined) {
      throw S3Errors.authorizationQueryParametersError(
        "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.",
      );
    }
  }
  const amzDate = get("X-Amz-Date")!;
  const signingTime = parseAmzDate(amzDate, malformed);
  const { accessKeyId, region } = parseCredential(get("X-Amz-Credential"), amzDate, malformed);
  const signedHeaders = parseSignedHeaders(get("X-Amz-SignedHeaders"), malformed);
  const signature = get("X-Amz-Signature")!;
  if (!HEX64.test(signature)) throw S3Errors.authorizationQueryParametersError("X-Amz-Signature must be 64 hex digits");
  const expires = get("X-Amz-Expires")!;
  const expiresSeconds = /^\d{1,7}$/.test(expires) ? Number(expires) : NaN;
  if (!(expiresSeconds >= 1)) throw S3Errors.authorizationQueryParametersError("X-Amz-Expires should be a number of seconds, at least 1");
  if (expiresSeconds > MAX_PRESIGN_SECONDS) {
    throw S3Errors.authorizationQueryParametersError(`X-Amz-Expires must be less than a week (in seconds) that is ${MAX_PRESIGN_SECONDS}`);
  }
  if (signingTime.getTime() - now > MAX_CLOCK_SKEW_MS) throw S3Errors.requestNotYetValid();
  if (now > signingTime.getTime() + expiresSeconds * 1000) throw S3Errors.requestExpired();
  // A presigned URL's body is never covered by its signature, unless the URL itself carries a hash.
  const payloadHash = checkPayloadHash(get("X-Amz-Content-Sha256") ?? UNSIGNED_PAYLOAD);
  return { style: "query", accessKeyId, region, signedHeaders, signature, amzDate, signingTime, expiresSeconds, payloadHash };
}

/** SHA-256 and HMAC-SHA256 from node:crypto, in the shape the signer takes. */
class NodeSha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash("sha256") : createHmac("sha256", keyBytes(secret));
  }
  update(data: string | Uint8Array): void {
    this.hash.update(data);
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }
}

const keyBytes = (key: string | ArrayBuffer | ArrayBufferView) =>
  typeof key === "string" ? key : ArrayBuffer.isView(key) ? Buffer.from(key.buffer, key.byteOffset, key.byteLength) : Buffer.from(key);

function signerFor(accessKeyId: string, secretAccessKey: string, region: string): SignatureV4 {
  return new SignatureV4({
    credentials: { accessKeyId, secretAccessKey },
    region,
    service: "s3",
    sha256: NodeSha256,
    // S3 signs the path as sent (encoded once) and never adds a payload hash header of its own.
    uriEscapePath: false,
    applyChecksum: false,
  });
}

const sameHex = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** S3's URI encoding of one path segment (RFC 3986 unreserved characters stay). */
const escapeSegment = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * The canonical URI: the path decoded and encoded again the way S3 clients encode it; the path as sent comes
 * second, for clients that sign what they send without normalising it.
 */
function canonicalPaths(rawPath: string): string[] {
  const normalised = rawPath
    .split("/")
    .map((s) => escapeSegment(decode(s)))
    .join("/");
  return normalised === rawPath ? [rawPath] : [normalised, rawPath];
}

/**
 * Checks the signature of a request against the secret of its access key; SignatureDoesNotMatch otherwise.
 * `rawPath` is the path as received (still percent-encoded), `query` the decoded query pairs.
 */
export async function verifySignature(req: IncomingMessage, rawPath: string, query: QueryPairs, signed: SignedRequest, secret: string): Promise<void> {
  const signer = signerFor(signed.accessKeyId, secret, signed.region);
  const headers: Record<string, string> = {};
  for (const name of signed.signedHeaders) {
    const values = req.headersDistinct[name];
    // Signed as text: the SDKs send non-ASCII values as UTF-8 bytes, which Node hands over as Latin-1.
    if (values) headers[name] = headerBytesAsText(values.join(","));
  }
  // The payload hash travels as a header the signer reads; unless the client signed it, it stays out of the canonical headers.
  headers["x-amz-content-sha256"] = signed.payloadHash;
  const signableHeaders = new Set(signed.signedHeaders);
  const unsignableHeaders = new Set(signableHeaders.has("x-amz-content-sha256") ? [] : ["x-amz-content-sha256"]);
  const queryObject: Record<string, string | string[]> = {};
  for (const [k, v] of query) {
    if (k === "X-Amz-Signature") continue;
    const prev = queryObject[k];
    queryObject[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  const host = req.headers.host ?? "";
  for (const path of canonicalPaths(rawPath)) {
    const request = { method: req.method ?? "GET", protocol: "http:", hostname: host, path, query: { ...queryObject }, headers: { ...headers } };
    let computed: string | undefined;
    if (signed.style === "header") {
      const out = await signer.sign(request, {
        signingDate: signed.signingTime,
        signableHeaders,
        unsignableHeaders,
        signingRegion: signed.region,
        signingService: "s3",
      });
      computed = /Signature=([0-9a-f]{64})/.exec(String(out.headers.authorization))?.[1];
    } else {
      const out = await signer.presign(request, {
        signingDate: signed.signingTime,
        expiresIn: signed.expiresSeconds,
        signableHeaders,
        unsignableHeaders,
        // Signed headers were sent as headers: none of them is to be moved into the query.
        unhoistableHeaders: new Set([...signableHeaders, "x-amz-content-sha256"]),
        signingRegion: signed.region,
        signingService: "s3",
      });
      computed = out.query?.["X-Amz-Signature"] as string | undefined;
    }
    if (computed && sameHex(computed, signed.signature)) return;
  }
  throw S3Errors.signatureDoesNotMatch();
}

const sha256Hex = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/**
 * The chain of signatures of an aws-chunked body: each chunk's signature covers its bytes and the signature
 * before it (the request's signature seeds the chain), and the trailer's covers the trailing headers.
 */
export class ChunkSignatures {
  private previous: string;
  private readonly signer: SignatureV4;
  private readonly scope: string;

  constructor(
    private readonly signed: SignedRequest,
    secret: string,
  ) {
    this.signer = signerFor(signed.accessKeyId, secret, signed.region);
    this.scope = `${signed.amzDate.slice(0, 8)}/${signed.region}/s3/aws4_request`;
    this.previous = signed.signature;
  }

  /** Checks the next chunk's signature, given the hex SHA-256 of its bytes. */
  async verifyChunk(chunkSha256: string, claimed: string): Promise<boolean> {
    return this.verifyNext(["AWS4-HMAC-SHA256-PAYLOAD", this.signed.amzDate, this.scope, this.previous, EMPTY_SHA256, chunkSha256].join("\n"), claimed);
  }

  /** Checks the trailer's signature; `trailer` is its headers as `name:value\n` lines. */
  async verifyTrailer(trailer: string, claimed: string): Promise<boolean> {
    return this.verifyNext(["AWS4-HMAC-SHA256-TRAILER", this.signed.amzDate, this.scope, this.previous, sha256Hex(trailer)].join("\n"), claimed);
  }

  private async verifyNext(stringToSign: string, claimed: string): Promise<boolean> {
    const expected = await this.signer.sign(stringToSign, { signingDate: this.signed.signingTime, signingRegion: this.signed.region, signingService: "s3" });
    const ok = HEX64.test(claimed) && sameHex(expected, claimed);
    this.previous = claimed;
    return ok;
  }
}
