import { createHash, type Hash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { S3Errors } from "./errors.js";
import type { ChunkSignatures } from "./sigv4.js";

/**
 * Decodes an aws-chunked request body (`Content-Encoding: aws-chunked`) into the object's bytes:
 *
 *     <hex size>[;chunk-signature=<sig>]\r\n<bytes>\r\n ... 0[;chunk-signature=<sig>]\r\n[<trailer lines>\r\n]\r\n
 *
 * With `signatures`, every chunk's signature is checked (the chain that the request's signature seeds) and,
 * when trailing headers come, the trailer's signature. The bytes pass on as they arrive; a bad signature or a
 * malformed frame fails the stream before it ends, so nothing is committed. Memory: one chunk header line.
 */

/** Longest chunk header or trailer line accepted (a size, a signature and some slack). */
const MAX_LINE_BYTES = 4096;
const MAX_TRAILER_LINES = 16;
const CRLF = Buffer.from("\r\n");

type State = { kind: "header" } | { kind: "data"; left: number } | { kind: "dataEnd" } | { kind: "trailer" } | { kind: "done" };

export interface ChunkedOptions {
  /** Check each chunk's signature (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]); unsigned chunks otherwise. */
  signatures?: ChunkSignatures;
  /** x-amz-decoded-content-length: the object's size, which the chunks must add up to. */
  decodedLength?: number;
  /** Receives each trailing header (e.g. x-amz-checksum-crc32) before the stream ends; may throw to refuse it. */
  onTrailer?: (name: string, value: string) => void;
}

export class AwsChunkedDecoder extends Transform {
  private state: State = { kind: "header" };
  /** Bytes of an unfinished header, CRLF or trailer line. */
  private pending: Buffer = Buffer.alloc(0);
  private chunkHash?: Hash;
  private chunkSignature = "";
  private trailerLines: string[] = [];
  private decoded = 0;

  constructor(private readonly opts: ChunkedOptions) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.consume(chunk).then(
      () => cb(),
      (err: unknown) => cb(err as Error),
    );
  }

  override _flush(cb: TransformCallback): void {
    if (this.state.kind !== "done") return cb(S3Errors.incompleteBody());
    if (this.opts.decodedLength !== undefined && this.decoded !== this.opts.decodedLength) return cb(S3Errors.incompleteBody());
    cb();
  }

  private async consume(input: Buffer): Promise<void> {
    let buf = this.pending.length ? Buffer.concat([this.pending, input]) : input;
    this.pending = Buffer.alloc(0);
    while (buf.length > 0) {
      const state = this.state;
      if (state.kind === "data") {
        const take = Math.min(state.left, buf.length);
        const bytes = buf.subarray(0, take);
        this.chunkHash?.update(bytes);
        this.push(bytes);
        buf = buf.subarray(take);
        state.left -= take;
        if (state.left === 0) this.state = { kind: "dataEnd" };
        continue;
      }
      if (state.kind === "done") throw malformed();
      const eol = buf.indexOf(CRLF);
      if (eol < 0) {
        if (buf.length > MAX_LINE_BYTES) throw malformed();
        this.pending = Buffer.from(buf);
        return;
      }
      const line = buf.subarray(0, eol).toString("latin1");
      buf = buf.subarray(eol + 2);
      if (state.kind === "dataEnd") {
        if (line !== "") throw malformed();
        await this.chunkEnded();
        this.state = { kind: "header" };
      } else if (state.kind === "header") {
        await this.chunkHeader(line);
      } else {
        await this.trailerLine(line);
      }
    }
  }

  private async chunkHeader(line: string): Promise<void> {
    const m = /^([0-9a-fA-F]{1,12})(?:;chunk-signature=([0-9a-f]{64}))?$/.exec(line);
    if (!m) throw malformed();
    if (this.opts.signatures && m[2] === undefined) throw S3Errors.signatureDoesNotMatch();
    const size = parseInt(m[1], 16);
    this.decoded += size;
    if (this.opts.decodedLength !== undefined && this.decoded > this.opts.decodedLength) throw S3Errors.incompleteBody();
    this.chunkSignature = m[2] ?? "";
    this.chunkHash = this.opts.signatures ? createHash("sha256") : undefined;
    if (size > 0) {
      this.state = { kind: "data", left: size };
      return;
    }
    // The last chunk: empty, signed like any other; then the trailer (or the blank line that ends the body).
    await this.chunkEnded();
    this.state = { kind: "trailer" };
  }

  private async chunkEnded(): Promise<void> {
    const sigs = this.opts.signatures;
    if (sigs && !(await sigs.verifyChunk(this.chunkHash!.digest("hex"), this.chunkSignature))) throw S3Errors.signatureDoesNotMatch();
  }

  private async trailerLine(line: string): Promise<void> {
    if (line !== "") {
      if (this.trailerLines.length >= MAX_TRAILER_LINES) throw malformed();
      this.trailerLines.push(line);
      return;
    }
    const headers = this.trailerLines.map((l) => {
      const colon = l.indexOf(":");
      if (colon <= 0) throw malformed();
      return [l.slice(0, colon).trim().toLowerCase(), l.slice(colon + 1).trim()] as const;
    });
    const sigs = this.opts.signatures;
    const signature = headers.find(([n]) => n === "x-amz-trailer-signature");
    const trailing = headers.filter(([n]) => n !== "x-amz-trailer-signature");
    if (sigs && trailing.length > 0) {
      if (!signature) throw S3Errors.signatureDoesNotMatch();
      const canonical = trailing.map(([n, v]) => `${n}:${v}\n`).join("");
      if (!(await sigs.verifyTrailer(canonical, signature[1]))) throw S3Errors.signatureDoesNotMatch();
    }
    for (const [name, value] of trailing) this.opts.onTrailer?.(name, value);
    this.state = { kind: "done" };
  }
}

const malformed = () => S3Errors.invalidRequest("The aws-chunked body is malformed.");
