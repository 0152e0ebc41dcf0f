// One floor of issue 34's 1 KiB HIT, as a process of its own (started by bench/cache/hit-floors.mjs, which reads the
// port it prints). Every mode serves the same fixed 1 KiB body with Node's http server, under the options the edge's
// server has (src/core/http/app.ts: header size bound, head time limit, keep-alive 65 s):
//   bare   the goal's floor: two headers (Content-Type, Content-Length), as bench/cache/cache.mjs's bare server;
//   head   the edge's HIT head, header for header (argv[3], JSON: writeHead's name/value list as the edge sent it),
//          with Age and cf-ray written per answer as the edge does: what the answer's eleven headers cost Node;
//   prebuilt  `head`'s bytes with its fixed fields written as one string built once (past writeHead's checks);
//   least  `head` plus the least work any HIT of a proxied name must do: the Host's zone found (a Map), the cache key
//          built from zone, scheme, host, path and the Accept-Encoding class and looked up (a Map), freshness checked
//          against the clock, Age worked out, a ray from a batch, and the answer counted per zone when it finishes
//          (status class and bytes). No Cache Rules, no limits, no readiness, no analytics rollup, no metrics.
// Usage: node hit-floor-server.mjs <mode> <port> [head JSON]. Imported (`handlerFor`), it gives a mode's request
// handler without a server: hit-floors.mjs preloads it into a copy of the platform (its `platform` path).
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";

const body = Buffer.alloc(1024, 97);
const options = { maxHeaderSize: 32 * 1024, connectionsCheckingInterval: 16_500 };

/** The edge's HIT head with Age and cf-ray at the end (hitHead's order); their values are set per answer. */
function hitHead(headText) {
  const list = JSON.parse(headText);
  const clean = [];
  for (let i = 0; i < list.length; i += 2) if (!["age", "cf-ray"].includes(list[i])) clean.push(list[i], list[i + 1]);
  clean.push("age", "0", "cf-ray", "");
  return clean;
}

// Rays as the forwarder draws them: one CSPRNG call a batch, each ray a slice of one flat string.
let rays = "";
let rayAt = 0;
const RAY = 16 + 4;
function nextRay() {
  if (rayAt >= rays.length) {
    rays = "";
    const bytes = randomBytes(8 * 512).toString("hex");
    for (let i = 0; i < 512; i++) rays += `${bytes.slice(i * 16, i * 16 + 16)}-LOC`;
    rayAt = 0;
  }
  const ray = rays.slice(rayAt, rayAt + RAY);
  rayAt += RAY;
  return ray;
}

/** A mode's request handler; `headText`: the edge's HIT head (writeHead's list, JSON). */
export function handlerFor(mode, headText) {
  let handler;
  if (mode === "bare") {
    handler = (req, res) => {
      res.writeHead(200, { "content-type": "text/javascript", "content-length": 1024 });
      res.end(body);
    };
  } else if (mode === "head") {
    const head = hitHead(headText);
    const n = head.length;
    const storedAt = Date.now();
    handler = (req, res) => {
      head[n - 3] = String(Math.floor((Date.now() - storedAt) / 1000));
      head[n - 1] = nextRay();
      res.writeHead(200, head);
      res.end(body);
    };
  } else if (mode === "prebuilt") {
    // `head`'s bytes, but its fixed fields joined into one string once and put into the head Node built (its internal
    // `_header`, after the status line) instead of passing through writeHead's per-field checks: what those checks and
    // the field-by-field building cost. A measurement only: the edge does not do this (docs/benchmarks.md, "The HIT,
    // session 26").
    const head = hitHead(headText);
    const n = head.length;
    let fixed = "";
    for (let i = 0; i < n - 4; i += 2) if (head[i] !== "content-length") fixed += `${head[i]}: ${head[i + 1]}\r\n`;
    const storedAt = Date.now();
    handler = (req, res) => {
      res.writeHead(200, ["content-length", "1024", "age", String(Math.floor((Date.now() - storedAt) / 1000)), "cf-ray", nextRay()]);
      res._header = "HTTP/1.1 200 OK\r\n" + fixed + res._header.slice(17);
      res.end(body);
    };
  } else if (mode === "least") {
    const head = hitHead(headText);
    const n = head.length;
    const zoneId = "0123456789abcdef0123456789abcdef";
    // The proxied names a node serves, by lower-cased Host (the edge's per-host memo).
    const zones = new Map([["www.bench-cache.example", { zoneId, counts: { status2xx: 0, bytes: 0 } }]]);
    const storedAt = Date.now();
    const objects = new Map([[`${zoneId}\nhttp://www.bench-cache.example/1k.js\n`, { body, freshUntil: storedAt + 3.6e6, storedAt, initialAge: 0 }]]);
    const encodings = new Map();
    const encodingClass = (value) => {
      if (value === undefined) return "";
      let c = encodings.get(value);
      if (c === undefined) {
        c = /\bbr\b/.test(value) ? "br" : /\bgzip\b/.test(value) ? "gzip" : "";
        if (encodings.size < 64) encodings.set(value, c);
      }
      return c;
    };
    const finished = (res) => {
      const site = res.site;
      if (res.statusCode < 300) site.counts.status2xx++;
      site.counts.bytes += res.sentBytes;
    };
    handler = (req, res) => {
      const hostHeader = req.headers.host ?? "";
      const colon = hostHeader.indexOf(":");
      const host = (colon < 0 ? hostHeader : hostHeader.slice(0, colon)).toLowerCase();
      const site = zones.get(host);
      if (site === undefined) return void res.writeHead(404, { "content-length": "0" }).end();
      const q = req.url.indexOf("?");
      const path = q < 0 ? req.url : req.url.slice(0, q);
      const key = `${site.zoneId}\nhttp://${host}${path}\n${encodingClass(req.headers["accept-encoding"])}`;
      const obj = objects.get(key);
      const now = Date.now();
      if (obj === undefined || obj.freshUntil <= now || req.method !== "GET") return void res.writeHead(404, { "content-length": "0" }).end();
      head[n - 3] = String(obj.initialAge + Math.max(0, Math.floor((now - obj.storedAt) / 1000)));
      head[n - 1] = nextRay();
      res.site = site;
      res.sentBytes = obj.body.length;
      res.once("finish", () => finished(res));
      res.writeHead(200, head);
      res.end(obj.body);
    };
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  return handler;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [mode, portText, headText] = process.argv.slice(2);
  const server = createServer(options, handlerFor(mode, headText));
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;
  server.listen(Number(portText), "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
}
