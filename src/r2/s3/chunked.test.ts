import { test } from "node:test";
import assert from "node:assert/strict";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { AwsChunkedDecoder, type ChunkedOptions } from "./chunked.js";
import { S3Error } from "./errors.js";

/** The aws-chunked framing without signatures (STREAMING-UNSIGNED-PAYLOAD-TRAILER), fed in awkward pieces. */
const decode = (wire: string | Buffer, opts: ChunkedOptions = {}, pieceBytes = 3) => {
  const bytes = Buffer.from(wire);
  const pieces: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += pieceBytes) pieces.push(bytes.subarray(i, i + pieceBytes));
  return buffer(Readable.from(pieces).pipe(new AwsChunkedDecoder(opts)));
};
const refusal = (code: string) => (e: unknown) => e instanceof S3Error && e.code === code;

test("chunks decode to their bytes, split anywhere; the trailer reaches onTrailer", async () => {
  const trailers: [string, string][] = [];
  const out = await decode("5\r\nhello\r\n7\r\n, world\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n", {
    decodedLength: 12,
    onTrailer: (n, v) => trailers.push([n, v]),
  });
  assert.equal(out.toString(), "hello, world");
  assert.deepEqual(trailers, [["x-amz-checksum-crc32", "AAAAAA=="]]);
  assert.equal((await decode("0\r\n\r\n", {}, 1)).length, 0);
  const big = Buffer.alloc(100_000, 7);
  const wire = Buffer.concat([Buffer.from("186a0\r\n"), big, Buffer.from("\r\n0\r\n\r\n")]);
  assert.deepEqual(await decode(wire, { decodedLength: 100_000 }, 65536), big);
});

test("truncated, malformed or mis-sized bodies fail the stream", async () => {
  await assert.rejects(decode("5\r\nhello\r\n"), refusal("IncompleteBody"));
  await assert.rejects(decode("5\r\nhel"), refusal("IncompleteBody"));
  await assert.rejects(decode("5\r\nhelloX\r\n0\r\n\r\n"), refusal("InvalidRequest"));
  await assert.rejects(decode("zz\r\nhello\r\n0\r\n\r\n"), refusal("InvalidRequest"));
  await assert.rejects(decode("5\r\nhello\r\n0\r\n\r\nextra"), refusal("InvalidRequest"));
  await assert.rejects(decode("5\r\nhello\r\n0\r\n\r\n", { decodedLength: 4 }), refusal("IncompleteBody"));
  await assert.rejects(decode("5\r\nhello\r\n0\r\n\r\n", { decodedLength: 6 }), refusal("IncompleteBody"));
  await assert.rejects(decode(`${"1".repeat(5000)}`), refusal("InvalidRequest"), "a header line without end is bounded");
  await assert.rejects(
    decode("0\r\nx-amz-checksum-sha1:x\r\n\r\n", {
      onTrailer: () => {
        throw new S3Error(400, "InvalidRequest", "not announced");
      },
    }),
    refusal("InvalidRequest"),
  );
});
