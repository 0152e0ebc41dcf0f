// The floors of bench/edge/worker-floors.mjs, each run as its own Node process in front of one workerd unix socket:
//   node worker-pipe-floor.mjs pipe <socket>            a bare byte pipe: each client connection piped to a new
//                                                       connection on the socket (the ceiling of any hop)
//   node worker-pipe-floor.mjs scanned <socket> <host>  the same pipe plus the least per-request work an edge needs on
//                                                       a hostname served wholly by one Worker (see ScannedConnection)
// Prints `{"port":N}` once listening; on SIGUSR2 prints `{"responses":N,"refused":N}` (what it counted).
// A measuring prototype, not the platform's code: what it cannot accept as plainly valid it refuses (400 and close)
// where a real edge would hand the connection back to Node's parser.
import { connect, createServer } from "node:net";

const [mode, socketPath, expectedHost] = process.argv.slice(2);
const HEAD_LIMIT = 16 * 1024;
const CRLFCRLF = Buffer.from("\r\n\r\n");
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const REQUEST_LINE = /^([A-Z]{1,20}) (\/[^ \x00-\x20\x7f]*) HTTP\/1\.1$/;
const STATUS_LINE = /^HTTP\/1\.1 (\d{3})(?: |$)/;
/** Headers the edge sets itself on a Worker's request (a client's own are dropped), and hop-by-hop ones. */
const DROPPED = new Set(["cf-connecting-ip", "x-forwarded-proto", "x-edge-binding", "keep-alive", "te", "trailer", "proxy-connection", "connection"]);
const counts = { responses: 0, refused: 0 };
let rays = 0;
const nextRay = () => (++rays).toString(16).padStart(16, "0");

/**
 * Where a message body ends in a byte stream, without copying it: a Content-Length's count, or chunked framing
 * (size line, data, CRLF, …, the last chunk and its trailers). `take` returns how many bytes of `b` from `at` belong to
 * the body, and sets `done` when it ended.
 */
class BodyFraming {
  remaining = 0; // bytes of a fixed-length body, or of the current chunk's data (+2 for its CRLF)
  chunked = false;
  state = 0; // chunked: 0 size line, 1 data and its CRLF, 2 trailer lines
  line = ""; // a size or trailer line read so far
  done = true;
  untilClose = false;

  start(kind, length) {
    this.chunked = kind === "chunked";
    this.untilClose = kind === "close";
    this.remaining = kind === "length" ? length : 0;
    this.state = 0;
    this.line = "";
    this.done = kind === "length" ? length === 0 : kind === "none";
  }

  /** Bytes of `b` from `at` that are body; throws on malformed chunked framing. */
  take(b, at) {
    if (this.untilClose) return b.length - at;
    if (!this.chunked) {
      const n = Math.min(this.remaining, b.length - at);
      this.remaining -= n;
      if (this.remaining === 0) this.done = true;
      return n;
    }
    let i = at;
    while (i < b.length && !this.done) {
      if (this.state === 1) {
        const n = Math.min(this.remaining, b.length - i);
        this.remaining -= n;
        i += n;
        if (this.remaining === 0) this.state = 0;
        continue;
      }
      const nl = b.indexOf(10, i);
      const end = nl === -1 ? b.length : nl + 1;
      this.line += b.latin1Slice(i, end);
      i = end;
      if (this.line.length > 1024) throw new Error("chunk line too long");
      if (nl === -1) break;
      if (!this.line.endsWith("\r\n")) throw new Error("bare LF in chunked framing");
      const line = this.line.slice(0, -2);
      this.line = "";
      if (this.state === 2) {
        if (line === "") this.done = true;
        continue;
      }
      const m = /^([0-9a-fA-F]{1,8})(;.*)?$/.exec(line);
      if (!m) throw new Error("bad chunk size");
      const size = parseInt(m[1], 16);
      if (size === 0) this.state = 2;
      else {
        this.remaining = size + 2; // its data and the CRLF after it (passed through; checked by workerd)
        this.state = 1;
      }
    }
    return i - at;
  }
}

class Refused extends Error {}

/**
 * One client connection piped to one workerd connection, with each request head and each answer head read:
 * - a request: its head found and checked (origin-form target, HTTP/1.1, no bare LF, no obs-fold, token names,
 *   one Host and it is the connection's, at most one Content-Length, Transfer-Encoding only `chunked` and not with a
 *   Content-Length, no Upgrade, at most 16 KiB), rewritten (the client's own cf-connecting-ip / x-forwarded-proto and
 *   hop-by-hop headers dropped, the edge's added with a cf-ray), and its body's end found;
 * - an answer: its head found, `cf-ray` added after its status line, its body's end found (Content-Length, chunked,
 *   none for HEAD/1xx/204/304, or until close), and counted.
 */
class ScannedConnection {
  reqHead = null; // bytes of an unfinished request head
  reqBody = new BodyFraming();
  resHead = null;
  resBody = new BodyFraming();
  /** Requests whose answers have not started, oldest first ([method, ray, …]): a HEAD's answer has no body. */
  pending = [];
  /** A refused request came after those pending: the connection ends (400) once their answers have. */
  refusing = false;

  constructor(client, upstream) {
    this.client = client;
    this.upstream = upstream;
    this.ip = client.remoteAddress ?? "";
  }

  /** What to write to workerd for a read from the client; a refused request stops the reading (see `refusing`). */
  fromClient(b) {
    const out = [];
    try {
      this.scanRequests(b, out);
    } catch {
      // Refused, or chunked framing the scanner does not accept: nothing more of this connection is forwarded.
      this.refusing = true;
    }
    return out;
  }

  scanRequests(b, out) {
    let i = 0;
    while (i < b.length) {
      if (!this.reqBody.done) {
        const n = this.reqBody.take(b, i);
        if (n > 0) out.push(i === 0 && n === b.length ? b : b.subarray(i, i + n));
        i += n;
        continue;
      }
      const found = this.reqHead ? -1 : b.indexOf(CRLFCRLF, i);
      if (found === -1) {
        // A head split across reads (rare): kept and searched whole.
        const joined = this.reqHead ? Buffer.concat([this.reqHead, b.subarray(i)]) : b.subarray(i);
        const end = joined.indexOf(CRLFCRLF);
        if (end === -1) {
          if (joined.length > HEAD_LIMIT) throw new Refused("head too large");
          this.reqHead = Buffer.from(joined);
          return;
        }
        this.reqHead = null;
        out.push(this.requestHead(joined.latin1Slice(0, end)));
        // The rest of this read after the head (joined ends with b's remainder).
        i = b.length - (joined.length - end - 4);
        continue;
      }
      if (found - i > HEAD_LIMIT) throw new Refused("head too large");
      out.push(this.requestHead(b.latin1Slice(i, found)));
      i = found + 4;
    }
  }

  requestHead(head) {
    const lines = head.split("\r\n");
    const m = REQUEST_LINE.exec(lines[0]);
    if (!m) throw new Refused("request line");
    let out = lines[0] + "\r\n";
    let hosts = 0;
    let length = -1;
    let chunked = false;
    for (let k = 1; k < lines.length; k++) {
      const line = lines[k];
      const colon = line.indexOf(":");
      if (colon <= 0) throw new Refused("header line"); // also an obs-fold line (starts with SP/HT: no token before ':')
      const name = line.slice(0, colon);
      if (!TOKEN.test(name)) throw new Refused("header name");
      const value = line.slice(colon + 1).trim();
      if (BAD_VALUE.test(value)) throw new Refused("header value"); // a bare LF or CR inside the head lands here
      const lower = name.toLowerCase();
      if (lower === "host") {
        if (++hosts > 1 || value.toLowerCase() !== expectedHost) throw new Refused("host");
      } else if (lower === "content-length") {
        if (length !== -1 || !/^\d{1,15}$/.test(value)) throw new Refused("content-length");
        length = Number(value);
      } else if (lower === "transfer-encoding") {
        if (chunked || value.toLowerCase() !== "chunked") throw new Refused("transfer-encoding");
        chunked = true;
      } else if (lower === "upgrade") throw new Refused("upgrade");
      else if (DROPPED.has(lower)) {
        if (lower === "connection" && /upgrade/i.test(value)) throw new Refused("upgrade");
        continue;
      }
      out += line + "\r\n";
    }
    if (hosts !== 1 || (chunked && length !== -1)) throw new Refused("framing");
    this.reqBody.start(chunked ? "chunked" : length > 0 ? "length" : "none", length);
    const ray = nextRay();
    this.pending.push(m[1], ray);
    out += `cf-connecting-ip: ${this.ip}\r\nx-forwarded-proto: http\r\ncf-ray: ${ray}\r\n\r\n`;
    return Buffer.from(out, "latin1");
  }

  fromUpstream(b) {
    const out = [];
    let i = 0;
    while (i < b.length) {
      if (!this.resBody.done) {
        const n = this.resBody.take(b, i);
        if (n > 0) out.push(i === 0 && n === b.length ? b : b.subarray(i, i + n));
        i += n;
        if (this.resBody.done) counts.responses++;
        continue;
      }
      const joined = this.resHead ? Buffer.concat([this.resHead, b.subarray(i)]) : b;
      const from = this.resHead ? 0 : i;
      const end = joined.indexOf(CRLFCRLF, from);
      if (end === -1) {
        this.resHead = Buffer.from(joined.subarray(from));
        if (this.resHead.length > HEAD_LIMIT) throw new Error("answer head too large");
        break;
      }
      this.resHead = null;
      out.push(this.answerHead(joined.latin1Slice(from, end)));
      i = b.length - (joined.length - end - 4);
    }
    return out;
  }

  answerHead(head) {
    const eol = head.indexOf("\r\n");
    const status = STATUS_LINE.exec(eol === -1 ? head : head.slice(0, eol));
    if (!status) throw new Error("status line");
    const code = Number(status[1]);
    let length = -1;
    let chunked = false;
    // Header names are matched case-insensitively by a scan of the lowered head (workerd sends lower-case names).
    const lower = head.toLowerCase();
    let at = lower.indexOf("\r\ncontent-length:");
    if (at !== -1) length = Number(lower.slice(at + 17, lower.indexOf("\r\n", at + 2) >>> 0).trim());
    at = lower.indexOf("\r\ntransfer-encoding:");
    if (at !== -1) chunked = /chunked/.test(lower.slice(at, lower.indexOf("\r\n", at + 2) >>> 0));
    const informational = code < 200;
    const method = this.pending[0];
    const ray = this.pending[1];
    if (!informational) this.pending.splice(0, 2);
    if (informational) this.resBody.start("none");
    else if (method === "HEAD" || code === 204 || code === 304) this.resBody.start("none");
    else if (chunked) this.resBody.start("chunked");
    else if (length >= 0) this.resBody.start("length", length);
    else this.resBody.start("close");
    if (this.resBody.done && !informational) counts.responses++;
    const line = `\r\ncf-ray: ${ray}`;
    return Buffer.from(eol === -1 ? head + line + "\r\n\r\n" : head.slice(0, eol) + line + head.slice(eol) + "\r\n\r\n", "latin1");
  }
}

/** Writes `pieces` in one system call where it can; pauses `from` until `to` drains. */
function send(to, from, pieces) {
  if (pieces.length === 0) return;
  let ok;
  if (pieces.length === 1) ok = to.write(pieces[0]);
  else {
    to.cork();
    for (const p of pieces) ok = to.write(p);
    to.uncork();
  }
  if (!ok) {
    from.pause();
    to.once("drain", () => from.resume());
  }
}

const server = createServer({ noDelay: true }, (client) => {
  const upstream = connect(socketPath);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on("error", end).on("close", end);
  upstream.on("error", end).on("close", end);
  if (mode === "pipe") {
    client.pipe(upstream);
    upstream.pipe(client);
    return;
  }
  const scanned = new ScannedConnection(client, upstream);
  /** A refused request is answered once every request before it has been (they were forwarded), then the connection ends. */
  const refuseWhenAnswered = () => {
    if (scanned.pending.length > 0 || !scanned.resBody.done) return;
    counts.refused++;
    client.end("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    upstream.destroy();
  };
  client.on("data", (b) => {
    send(upstream, client, scanned.fromClient(b));
    if (scanned.refusing) {
      client.pause();
      client.removeAllListeners("data");
      refuseWhenAnswered();
    }
  });
  upstream.on("data", (b) => {
    let out;
    try {
      out = scanned.fromUpstream(b);
    } catch {
      return end();
    }
    send(client, upstream, out);
    if (scanned.refusing) refuseWhenAnswered();
  });
});
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
process.on("SIGUSR2", () => console.log(JSON.stringify(counts)));
process.on("SIGTERM", () => process.exit(0));
