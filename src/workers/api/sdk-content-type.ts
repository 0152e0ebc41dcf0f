import type { IncomingMessage } from "node:http";
import type { FastifyRequest } from "fastify";

/** `--` + a boundary (RFC 2046: 1 to 70 characters of this set, not ending in a space) + CRLF. */
const BOUNDARY_LINE = /^--([0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?])\r\n/;
/** Enough bytes to hold the longest boundary line. */
const PEEK_BYTES = 2 + 70 + 2;

/**
 * The `cloudflare` SDK (7.x) sends `workers.scripts.update` as a multipart/form-data body labelled
 * `Content-Type: application/javascript` (the one-file upload's type, overriding the form's own), without the
 * boundary; the hosted API takes it. A preParsing hook for the upload routes: when a body so labelled starts with a
 * multipart boundary line, the request is read as the multipart form it is, with that boundary. The bytes peeked at
 * are put back (the multipart reader reads the raw request), and a body that is not a form keeps its 415.
 */
export async function multipartLabelledAsJavascript(req: FastifyRequest): Promise<void> {
  const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/javascript") return;
  const head = await peek(req.raw, PEEK_BYTES);
  const boundary = head && BOUNDARY_LINE.exec(head.toString("latin1"))?.[1];
  if (boundary) req.headers["content-type"] = `multipart/form-data; boundary=${boundary}`;
}

/** Reads up to `bytes` bytes of the body and puts them back; undefined when the body ended or failed first. */
function peek(raw: IncomingMessage, bytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const done = (result: Buffer | undefined) => {
      raw.off("readable", onReadable);
      raw.off("end", onEnd);
      raw.off("error", onEnd);
      raw.off("close", onEnd);
      resolve(result);
    };
    const onEnd = () => done(undefined);
    const onReadable = () => {
      let chunk: Buffer | null;
      while (have < bytes && (chunk = raw.read() as Buffer | null) !== null) {
        chunks.push(chunk);
        have += chunk.length;
      }
      if (have >= bytes || raw.readableEnded) {
        const all = Buffer.concat(chunks);
        raw.unshift(all);
        done(all);
      }
    };
    raw.on("readable", onReadable);
    raw.on("end", onEnd);
    raw.on("error", onEnd);
    raw.on("close", onEnd);
  });
}
