import { createHash, type Hash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { Transform, type TransformCallback } from "node:stream";
import { crc32 } from "node:zlib";
import { S3Error, S3Errors } from "./errors.js";

/**
 * Checks of a request body as it streams through: the hex SHA-256 of x-amz-content-sha256, Content-MD5, and
 * S3's flexible checksums (x-amz-checksum-*, in a header or an aws-chunked trailer). A mismatch fails the stream
 * before it ends, so the store never commits the object.
 */

/** The flexible checksums S3 clients send, and what computes each; CRC32C and CRC64NVME are not offered. */
const CHECKSUMS = {
  crc32: () => new Crc32(),
  sha1: () => createHash("sha1"),
  sha256: () => createHash("sha256"),
} as const;
type ChecksumName = keyof typeof CHECKSUMS;
const UNSUPPORTED_CHECKSUMS = ["crc32c", "crc64nvme"];

/** node:zlib's crc32, in the update/digest shape of a hash (digest: 4 bytes, big-endian, as S3 encodes it). */
class Crc32 {
  private value = 0;
  update(data: Buffer): this {
    this.value = crc32(data, this.value);
    return this;
  }
  digest(): Buffer {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(this.value >>> 0);
    return out;
  }
}

/** What a body must match; each field set when the request asked for that check. */
export interface BodyExpectations {
  /** x-amz-content-sha256 when it is a hex digest. */
  sha256Hex?: string;
  /** Content-MD5, base64. */
  md5Base64?: string;
  /** x-amz-checksum-<name> from a header: name and base64 value. */
  checksum?: { name: ChecksumName; base64: string };
  /** The name of the checksum an aws-chunked trailer will carry (x-amz-trailer). */
  trailerChecksum?: ChecksumName;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const checksumHeader = (name: string) => `x-amz-checksum-${name}`;

function checksumNameOf(header: string, lower: string): ChecksumName {
  const name = lower.slice("x-amz-checksum-".length);
  if (UNSUPPORTED_CHECKSUMS.includes(name)) throw S3Errors.notImplemented(`the ${header} checksum (use CRC32, SHA1 or SHA256)`);
  if (!(name in CHECKSUMS)) throw S3Errors.invalidRequest(`Unknown checksum header ${header}`);
  return name as ChecksumName;
}

/**
 * Reads the checks a request asks for from its headers (and, for presigned URLs, the x-amz-* query values
 * that stand for headers). `payloadHash` is the signature's x-amz-content-sha256.
 */
export function bodyExpectations(headers: IncomingHttpHeaders, payloadHash: string): BodyExpectations {
  const out: BodyExpectations = {};
  if (/^[0-9a-f]{64}$/.test(payloadHash)) out.sha256Hex = payloadHash;
  const md5 = headers["content-md5"];
  if (typeof md5 === "string") {
    if (!BASE64.test(md5) || Buffer.from(md5, "base64").length !== 16) throw S3Errors.invalidDigest();
    out.md5Base64 = md5;
  }
  for (const [header, value] of Object.entries(headers)) {
    if (!header.startsWith("x-amz-checksum-") || header === "x-amz-checksum-algorithm" || header === "x-amz-checksum-type" || typeof value !== "string")
      continue;
    if (out.checksum) throw S3Errors.invalidRequest("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.");
    const name = checksumNameOf(header, header);
    if (!BASE64.test(value)) throw S3Errors.invalidChecksum(header);
    out.checksum = { name, base64: value };
  }
  const trailer = headers["x-amz-trailer"];
  if (typeof trailer === "string" && trailer !== "") {
    const lower = trailer.trim().toLowerCase();
    if (!lower.startsWith("x-amz-checksum-")) throw S3Errors.invalidRequest(`The trailer ${trailer} is not a checksum header`);
    out.trailerChecksum = checksumNameOf(trailer, lower);
  }
  return out;
}

/** A pass-through stream that computes what `expect` asks for and fails at the end on any mismatch. */
export class BodyVerifier extends Transform {
  private readonly sha256?: Hash;
  private readonly md5?: Hash;
  private readonly checksum?: { name: ChecksumName; hash: Hash | Crc32; expected?: string };
  /** The checksum the aws-chunked trailer brought, set by the decoder before this stream ends. */
  private trailerValue?: string;

  constructor(private readonly expect: BodyExpectations) {
    super();
    if (expect.sha256Hex) this.sha256 = createHash("sha256");
    if (expect.md5Base64) this.md5 = createHash("md5");
    const name = expect.checksum?.name ?? expect.trailerChecksum;
    if (name) this.checksum = { name, hash: CHECKSUMS[name](), expected: expect.checksum?.base64 };
  }

  /** Whether this body needs any check at all (otherwise the stream can be skipped). */
  static needed(expect: BodyExpectations): boolean {
    return Boolean(expect.sha256Hex || expect.md5Base64 || expect.checksum || expect.trailerChecksum);
  }

  /** The value of the checksum trailer (the aws-chunked decoder calls this when it reads it). */
  setTrailer(name: string, value: string): void {
    if (!this.expect.trailerChecksum || name !== checksumHeader(this.expect.trailerChecksum)) {
      throw S3Errors.invalidRequest(`The trailer ${name} was not announced in x-amz-trailer`);
    }
    this.trailerValue = value;
  }

  /** The checksum headers to answer with (S3 echoes the checksum it verified). */
  verifiedChecksum(): Record<string, string> {
    return this.checksum ? { [checksumHeader(this.checksum.name)]: this.checksum.expected ?? this.trailerValue ?? "" } : {};
  }

  /** Checks a whole body already in memory (without streaming it through). */
  verifyWhole(body: Buffer): void {
    this.consume(body);
    const err = this.mismatch();
    if (err) throw err;
  }

  private consume(chunk: Buffer): void {
    this.sha256?.update(chunk);
    this.md5?.update(chunk);
    this.checksum?.hash.update(chunk);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.consume(chunk);
    cb(null, chunk);
  }

  override _flush(cb: TransformCallback): void {
    cb(this.mismatch() ?? null);
  }

  private mismatch(): S3Error | undefined {
    if (this.sha256 && this.sha256.digest("hex") !== this.expect.sha256Hex) return S3Errors.contentSha256Mismatch();
    if (this.md5 && this.md5.digest("base64") !== this.expect.md5Base64) return S3Errors.badDigest();
    if (this.checksum) {
      const expected = this.checksum.expected ?? this.trailerValue;
      if (expected === undefined) return S3Errors.invalidRequest(`The ${checksumHeader(this.checksum.name)} trailer is missing`);
      this.checksum.expected = expected;
      if (this.checksum.hash.digest().toString("base64") !== expected) return S3Errors.badDigest(this.checksum.name.toUpperCase());
    }
    return undefined;
  }
}
