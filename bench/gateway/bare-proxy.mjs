// The floor for any Node proxy: a bare pass-through with an undici keep-alive pool and nothing else (no auth,
// no logs, no usage). It reads the small request body whole and passes the answer on from undici's dispatch
// callbacks, as the gateway does; the gap between it and the gateway is the gateway's own work.
import { createServer } from "node:http";
import { Pool } from "undici";

const upstream = new URL(process.argv[2]);
const path = upstream.pathname + "/chat/completions";
const pool = new Pool(upstream.origin, { connections: 256 });
const HOP = new Set(["host", "connection", "keep-alive", "transfer-encoding"]);

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    const headers = {};
    for (const k in req.headers) if (!HOP.has(k)) headers[k] = req.headers[k];
    headers["content-length"] = String(body.length);
    pool.dispatch(
      { path, method: req.method, headers, body },
      {
        onRequestStart() {},
        onResponseStart(_c, status, h) {
          delete h.connection;
          delete h["keep-alive"];
          delete h["transfer-encoding"];
          res.writeHead(status, h);
        },
        onResponseData(_c, chunk) {
          res.write(chunk);
        },
        onResponseEnd() {
          res.end();
        },
        onResponseError(_c, e) {
          if (res.headersSent) return res.destroy();
          res.writeHead(502).end(String(e));
        },
      },
    );
  });
});
server.keepAliveTimeout = 65_000;
process.on("SIGINT", () => process.exit(0));
server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
