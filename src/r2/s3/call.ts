import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { Principal } from "../../core/auth/principal.js";
import { UNTRUSTED_CONTENT_HEADERS } from "../../core/http/untrusted-content.js";
import type { BucketRef, R2Store } from "../store.js";
import { BodyVerifier, bodyExpectations } from "./checksums.js";
import { AwsChunkedDecoder } from "./chunked.js";
import { S3Error, S3Errors } from "./errors.js";
import { ChunkSignatures, STREAMING_SIGNED, STREAMING_SIGNED_TRAILER, STREAMING_UNSIGNED_TRAILER, type SignedRequest } from "./sigv4.js";
import { readsRequestWhole } from "../objects/body-policy.js";
import { xmlDocument, type XmlContent } from "./xml.js";

/** XML request bodies (CompleteMultipartUpload of 10,000 parts, DeleteObjects of 1,000 long keys) fit in this. */
export const MAX_XML_BODY_BYTES = 4 * 1024 * 1024;
/**
 * One authenticated S3 request, as the operations see it: who asks for which bucket and key in which account,
 * the request's parameters, and the body and response helpers. The signature has been checked already.
 */
export class S3Call {
  /** Response headers every answer carries (request id, CORS headers once the bucket's rules matched). */
  readonly responseHeaders: Record<string, string>;
  /** The size of the object (or range) an answer carries, once GetObject or HeadObject found it (r2OperationsAdaptiveGroups). */
  objectSize = 0;
  private verifier?: BodyVerifier;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly store: R2Store,
    readonly requestId: string,
    readonly principal: Principal,
    readonly accountId: string,
    readonly bucket: string | undefined,
    readonly key: string,
    /** Query parameters by name (the first value of each). */
    readonly query: ReadonlyMap<string, string>,
    /** The request headers, with the x-amz-* parameters of a presigned URL's query added as the headers they stand for. */
    readonly headers: IncomingHttpHeaders,
    readonly signed: SignedRequest,
    private readonly secret: string,
  ) {
    // Every S3 answer is served on the platform's hosts: whatever bytes a tenant stored, a browser runs none of them.
    this.responseHeaders = { "x-amz-request-id": requestId, ...UNTRUSTED_CONTENT_HEADERS };
  }

  get ref(): BucketRef {
    return { accountId: this.accountId, bucketName: this.bucket ?? "" };
  }

  /** One header's value (the first when repeated). */
  header(name: string): string | undefined {
    const v = this.headers[name];
    return Array.isArray(v) ? v[0] : v;
  }

  /** The declared size of the object in the body: x-amz-decoded-content-length for aws-chunked, else Content-Length. */
  declaredSize(): number | undefined {
    const raw = this.chunked() ? this.header("x-amz-decoded-content-length") : this.header("content-length");
    if (raw === undefined) {
      if (this.chunked()) throw S3Errors.missingContentLength();
      return undefined;
    }
    if (!/^\d{1,16}$/.test(raw)) throw S3Errors.invalidArgument("The content length is not a number", "Content-Length", raw);
    return Number(raw);
  }

  private chunked(): boolean {
    return this.signed.payloadHash.startsWith("STREAMING-");
  }

  /**
   * The body as the object's bytes: aws-chunked frames decoded (each chunk's signature checked), and every check
   * the request asked for (payload SHA-256, Content-MD5, x-amz-checksum-*) applied as it streams. Any failure
   * errors the stream before its end, so a store that commits on end never commits a bad body.
   */
  body(): Readable {
    const expect = bodyExpectations(this.headers, this.signed.payloadHash);
    let body: Readable = this.req;
    const verifier = BodyVerifier.needed(expect) ? new BodyVerifier(expect) : undefined;
    if (this.chunked()) {
      const signatures =
        this.signed.payloadHash === STREAMING_SIGNED || this.signed.payloadHash === STREAMING_SIGNED_TRAILER
          ? new ChunkSignatures(this.signed, this.secret)
          : undefined;
      if (this.signed.payloadHash === STREAMING_UNSIGNED_TRAILER && !expect.trailerChecksum) {
        throw S3Errors.invalidRequest("STREAMING-UNSIGNED-PAYLOAD-TRAILER needs an x-amz-trailer checksum");
      }
      const decoder = new AwsChunkedDecoder({
        signatures,
        decodedLength: this.declaredSize(),
        onTrailer: (name, value) => {
          if (!verifier) throw S3Errors.invalidRequest(`The trailer ${name} was not announced in x-amz-trailer`);
          verifier.setTrailer(name, value);
        },
      });
      body = forward(body, decoder);
    }
    if (verifier) body = forward(body, verifier);
    this.verifier = verifier;
    return body;
  }

  /**
   * The body as the store takes it: a small body of known length read whole and checked (R2BodyPolicy.wholeRequestBytes),
   * anything else as the checked stream of `body()`.
   */
  async bodyForStore(): Promise<Readable | Buffer> {
    const size = this.declaredSize();
    if (this.chunked() || !readsRequestWhole(size)) return this.body();
    const expect = bodyExpectations(this.headers, this.signed.payloadHash);
    const chunks: Buffer[] = [];
    for await (const chunk of this.req) chunks.push(chunk as Buffer);
    const bytes = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    if (bytes.length !== size) throw S3Errors.incompleteBody();
    if (BodyVerifier.needed(expect)) {
      this.verifier = new BodyVerifier(expect);
      this.verifier.verifyWhole(bytes);
    }
    return bytes;
  }

  /** Checksum headers S3 echoes after a verified upload. */
  verifiedChecksumHeaders(): Record<string, string> {
    return this.verifier?.verifiedChecksum() ?? {};
  }

  /** Reads a small (XML) body whole, with the same checks as `body()`; refused past `limit` bytes. */
  async smallBody(limit = MAX_XML_BODY_BYTES): Promise<Buffer> {
    const declared = this.declaredSize();
    if (declared !== undefined && declared > limit) {
      this.req.resume();
      throw S3Errors.xmlTooLarge(limit);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of this.body()) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        this.req.resume();
        throw S3Errors.xmlTooLarge(limit);
      }
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }

  /** Answers with an XML document. */
  sendXml(status: number, root: string, content: XmlContent, headers: Record<string, string> = {}): void {
    const xml = xmlDocument(root, content);
    this.res.writeHead(status, {
      ...this.responseHeaders,
      ...headers,
      "content-type": "application/xml",
      "content-length": Buffer.byteLength(xml),
    });
    this.res.end(xml);
  }

  /** Answers without a body (204 for deletes, 200 for HEAD and for PUTs that only return headers). */
  sendEmpty(status: number, headers: Record<string, string> = {}): void {
    this.res.writeHead(status, { ...this.responseHeaders, "content-length": "0", ...headers });
    this.res.end();
  }
}

/** Pipes `from` into `to`, passing an error of `from` on to `to` (so the reader of `to` sees it). */
function forward<T extends NodeJS.ReadWriteStream & Readable>(from: Readable, to: T): T {
  from.on("error", (err) => to.destroy(err));
  from.pipe(to);
  return to;
}

/** Renders an S3 error as its XML document (or headers only, for HEAD, which has no body). */
export function sendS3Error(
  res: ServerResponse,
  err: S3Error,
  at: { requestId: string; resource: string; method?: string; headers?: Record<string, string> },
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> = { ...at.headers, "x-amz-request-id": at.requestId, ...UNTRUSTED_CONTENT_HEADERS };
  if (at.method === "HEAD") {
    res.writeHead(err.status, { ...headers, "content-length": "0" });
    res.end();
    return;
  }
  const xml = xmlDocument("Error", { Code: err.code, Message: err.message, ...err.details, Resource: at.resource, RequestId: at.requestId }, false);
  res.writeHead(err.status, { ...headers, "content-type": "application/xml", "content-length": Buffer.byteLength(xml) });
  res.end(xml);
}
