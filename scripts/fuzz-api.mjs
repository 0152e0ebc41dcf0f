#!/usr/bin/env node
// Hostile-input fuzzer: starts a fresh `edgecli serve` (the built dist/, like the test suite), makes two accounts
// with the same resources in each, then for --duration seconds sends mutated requests to every endpoint family of
// the API surface (src/core/testing/api-surface.ts): bodies, paths, query strings and headers, with the first
// account's token, the second's, none or a broken one, over HTTP and over raw sockets. An endpoint that deletes a
// fixture (a zone, a queue, a D1 database...) is sent against one that does not exist, so the fixtures last the run.
// Not part of the test suite.
//
//   npm run build
//   node scripts/fuzz-api.mjs [--seed N] [--duration 180] [--concurrency 8] [--timeout 10000] [--rss-limit-mb 600] [--json]
//
// Counts requests tried, answers by status class, 5xx answers (with samples, by endpoint, and the server's own
// error log lines by message), timeouts (no answer within --timeout) and socket errors. A request that timed out is
// replayed alone afterwards; one that again gets no answer is a hang (the first 20 are replayed). While it runs it
// samples the server's RSS (/proc) and how long /healthz takes; after it, it checks that the server still answers a
// well-formed request and that its RSS is under --rss-limit-mb. Exit status 1 on any 5xx, hang or failed check.
// The same seed generates the same requests (their interleaving under concurrency, and so some answers, may differ).
import { readFileSync } from "node:fs";
import { Agent, request } from "undici";

const dist = new URL("../dist/", import.meta.url);
const load = (p) => import(new URL(p, dist).href);
const { startTestPlatform } = await load("core/testing/platform.js");
const { ENDPOINTS, FAMILIES, multipartOf, setUpAccounts, urlOf } = await load("core/testing/api-surface.js");
const { rawRequest } = await load("core/testing/raw-http.js");
const { startMockProvider } = await load("ai-gateway/testing/mock-provider.js");

const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const SEED = Number(opt("seed", String(Math.floor(Math.random() * 2 ** 32))));
const DURATION_S = Number(opt("duration", "180"));
const CONCURRENCY = Number(opt("concurrency", "8"));
const TIMEOUT_MS = Number(opt("timeout", "10000"));
const RSS_LIMIT_MB = Number(opt("rss-limit-mb", "600"));
const AS_JSON = argv.includes("--json");
const say = (line) => (AS_JSON ? process.stderr.write(`${line}\n`) : console.log(line));

// ---- a seeded generator (sfc32, seeded through splitmix32) ----
function generator(seed) {
  let s = seed >>> 0;
  const split = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = split(),
    b = split(),
    c = split(),
    d = split();
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) >>> 0;
    return t / 2 ** 32;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (xs) => xs[int(xs.length)], chance: (p) => next() < p };
}
const rnd = generator(SEED);

// ---- hostile values ----
const deep = (n, open = "[", close = "]") => open.repeat(n) + close.repeat(n);
const HOSTILE_NUMBERS = ["99999999999999999999", "9007199254740991", "9007199254740992", "-1", "0", "1.5", "1e308", "-0", "NaN", "Infinity", "0x10", "", " 1"];
const hostileString = () =>
  rnd.pick([
    () => "a".repeat(rnd.pick([1, 255, 256, 1024, 1025, 5000, 70_000])),
    () => "\u0000\u0001\u001f",
    () => "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ✓ \ud800",
    () => "../../etc/passwd",
    () => "__proto__",
    () => "constructor",
    () => "prototype",
    () => "' OR 1=1 --",
    () => "%zz%ff",
    () => "<script>alert(1)</script>",
    () => deep(rnd.pick([10, 100, 9000])),
    () => " ",
  ])();
const hostileJsonValue = () =>
  rnd.pick([
    () => hostileString(),
    () => Number(rnd.pick(HOSTILE_NUMBERS)) || 1e308,
    () => -0,
    () => null,
    () => true,
    () => [],
    () => ({}),
    () => JSON.parse(`{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}`),
    () => Array.from({ length: rnd.pick([1, 100, 10_001]) }, () => "x"),
    () => ({ nested: JSON.parse(deep(rnd.pick([5, 60]))) }),
  ])();

/** Replaces, adds or removes one random field somewhere in a JSON value. */
function mutateJson(v, depth = 0) {
  if (Array.isArray(v)) {
    if (v.length === 0 || rnd.chance(0.2)) return [...v, hostileJsonValue()];
    const i = rnd.int(v.length);
    return v.map((x, j) => (j === i ? mutateJson(x, depth + 1) : x));
  }
  if (v && typeof v === "object") {
    const keys = Object.keys(v);
    const out = { ...v };
    if (keys.length === 0 || rnd.chance(0.25))
      out[rnd.pick(["__proto__", "constructor", "prototype", hostileString().slice(0, 64), "extra"])] = hostileJsonValue();
    else if (rnd.chance(0.2)) delete out[rnd.pick(keys)];
    else {
      const k = rnd.pick(keys);
      out[k] = depth < 3 && rnd.chance(0.5) ? mutateJson(v[k], depth + 1) : hostileJsonValue();
    }
    return out;
  }
  return hostileJsonValue();
}

function jsonBody(sample) {
  const text = sample === undefined ? "{}" : JSON.stringify(mutateJson(sample));
  return rnd.pick([
    () => text,
    () => text,
    () => text,
    () => text.slice(0, rnd.int(text.length + 1)),
    () => deep(rnd.pick([63, 64, 65, 8000, 100_000])),
    () => `{"a":${deep(rnd.pick([100, 8000]), "[", "]")}}`,
    () => text.replace(/"/g, "'"),
    () => Buffer.from(Array.from({ length: rnd.int(512) }, () => rnd.int(256))),
    () => "",
    () => "null",
    () => `[${text},${text}]`,
  ])();
}

function mutateBytes(buf) {
  const b = Buffer.from(buf);
  const n = 1 + rnd.int(8);
  for (let i = 0; i < n && b.length; i++) b[rnd.int(b.length)] = rnd.int(256);
  return b;
}

/** Well-formed multipart bodies by endpoint, made once before the run (so drawing a case never waits). */
const multipartSamples = new Map();

function multipartBody(e) {
  // An endpoint that does not take multipart gets the KV value's form.
  const good = multipartSamples.get(e) ?? multipartSamples.get(ENDPOINTS.find((x) => x.family === "kv" && x.body === "multipart"));
  const boundary = /boundary=(.+)$/.exec(good.contentType)[1];
  return rnd.pick([
    () => good,
    () => ({ contentType: "multipart/form-data", body: good.body }),
    () => ({ contentType: good.contentType, body: good.body.subarray(0, rnd.int(good.body.length)) }),
    () => ({ contentType: good.contentType, body: mutateBytes(good.body) }),
    () => ({ contentType: `multipart/form-data; boundary=${boundary}x`, body: good.body }),
    () => ({ contentType: good.contentType, body: Buffer.concat([good.body, good.body]) }),
    () => ({
      contentType: good.contentType,
      body: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="metadata[__proto__][x]"\r\n\r\n1\r\n--${boundary}--\r\n`),
    }),
    () => ({
      contentType: good.contentType,
      body: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n${deep(8000)}\r\n--${boundary}--\r\n`),
    }),
    () => ({
      contentType: good.contentType,
      body: Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${"n".repeat(5000)}"\r\n\r\nx\r\n--${boundary}--\r\n`),
    }),
  ])();
}

// ---- paths, queries and headers ----
/** Percent-encodes, with lone surrogates made well-formed first (encodeURIComponent throws on them). */
const enc = (text) => encodeURIComponent(text.toWellFormed());
function mutatePath(path) {
  return rnd.pick([
    () => path,
    () => path,
    () => path,
    () => `${path}${rnd.pick(["%zz", "%", "%ff%fe", "%E0%A4%A", "%00", "%2e%2e/", "/..", "//", "/", ";x=1", "%2F"])}`,
    () => path.replace(/[0-9a-f]{32}/, () => rnd.pick(["0".repeat(32), "x", "%zz", "a".repeat(33), "__proto__"])),
    () => `${path}/${enc(hostileString()).slice(0, rnd.pick([10, 1000, 20_000]))}`,
    () => path.toUpperCase(),
  ])();
}

const QUERY_NAMES = [
  "page",
  "per_page",
  "limit",
  "cursor",
  "prefix",
  "order",
  "direction",
  "search",
  "name",
  "match",
  "filters",
  "order_by",
  "start_date",
  "min_cost",
  "feedback",
  "type",
  "__proto__[x]",
  "constructor.prototype.x",
];
function query() {
  if (rnd.chance(0.4)) return "";
  const parts = [];
  const n = 1 + rnd.int(4);
  for (let i = 0; i < n; i++) {
    const name = rnd.pick(QUERY_NAMES);
    const value = rnd.pick([
      () => rnd.pick(HOSTILE_NUMBERS),
      () => enc(hostileString()).slice(0, 4000),
      () => rnd.pick(["%zz", "%ff", "%"]),
      () => enc(deep(rnd.pick([10, 1000]))),
      () => "",
    ])();
    parts.push(`${name}=${value}`);
  }
  return `?${parts.join("&")}`;
}

function authHeaders(fixtures) {
  return rnd.pick([
    () => ({ authorization: `Bearer ${fixtures[0].token}` }),
    () => ({ authorization: `Bearer ${fixtures[0].token}` }),
    () => ({ authorization: `Bearer ${fixtures[1].token}` }),
    () => ({}),
    () => ({ authorization: rnd.pick(["Bearer", "Bearer x", `Bearer ${"A".repeat(40)}`, "Basic Zm9vOmJhcg==", `Bearer ${fixtures[0].token}x`]) }),
    () => ({ "x-auth-email": "a@b.c", "x-auth-key": "k".repeat(37) }),
  ])();
}

/**
 * Header values an HTTP client can send (undici refuses control characters, and a refused call can leave its pool
 * stuck); bytes no client sends go over raw sockets instead.
 */
const headerSafe = (value) => value.replace(/[^\t\x20-\x7e]/g, "?");

function extraHeaders() {
  if (rnd.chance(0.6)) return {};
  const headers = rnd.pick([
    () => ({ "cf-aig-metadata": rnd.pick([deep(3000, "{", "}"), "{}", "x", JSON.stringify({ a: 1, b: 2, c: 3, d: 4, e: 5, f: 6 })]) }),
    () => ({ "cf-aig-cache-ttl": rnd.pick(HOSTILE_NUMBERS) || "1", "cf-aig-skip-cache": rnd.pick(["true", "x"]) }),
    () => ({ "cf-aig-max-attempts": rnd.pick(HOSTILE_NUMBERS) || "1", "cf-aig-request-timeout": rnd.pick(HOSTILE_NUMBERS) || "1" }),
    () => ({
      "content-type": rnd.pick(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "application/json; charset=latin1", "garbage"]),
    }),
    () => ({ range: rnd.pick(["bytes=0-", "bytes=-1", "bytes=99999999999999999999-", "bytes=5-1", "x"]) }),
    () => ({ "if-match": hostileString().slice(0, 200), "if-modified-since": "not a date" }),
    () => ({ "x-request-id": hostileString().slice(0, 200) }),
  ])();
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, headerSafe(String(v))]));
}

// ---- raw-socket cases: heads an HTTP client will not send ----
/**
 * Bytes for one connection, and whether the client then half-closes it. Complete requests ask for
 * `Connection: close` (the server closes after answering); requests left incomplete on purpose (a chunk that never
 * ends, a head cut short) are half-closed, so the server knows nothing more is coming and must refuse them. (Node's
 * server takes a client's half-close as the client going away, so a complete request is not half-closed: its answer
 * could be dropped.)
 */
function rawCase(target, host, auth) {
  const a = auth.authorization ? `Authorization: ${auth.authorization}\r\n` : "";
  const close = "Connection: close\r\n";
  return rnd.pick([
    () => ({ bytes: `GET ${target}?pad=${"a".repeat(rnd.pick([16_000, 17_000, 40_000]))} HTTP/1.1\r\nHost: ${host}\r\n${a}${close}\r\n` }),
    () => ({ bytes: `GET ${target} HTTP/1.1\r\nHost: ${host}\r\n${a}${close}X-Pad: ${"p".repeat(40_000)}\r\n\r\n` }),
    () => ({
      bytes: Buffer.concat([Buffer.from(`GET ${target}`), Buffer.from([0xff, 0x00, 0x7f]), Buffer.from(` HTTP/1.1\r\nHost: ${host}\r\n${close}\r\n`)]),
    }),
    () => ({
      bytes: `POST ${target} HTTP/1.1\r\nHost: ${host}\r\n${a}${close}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${rnd.pick(["zz\r\n", "5\r\n{}\r\n", "ffffffffffffffff\r\n"])}`,
      halfClose: true,
    }),
    () => ({ bytes: `POST ${target} HTTP/1.1\r\nHost: ${host}\r\n${a}${close}Content-Length: 5\r\nContent-Length: 6\r\n\r\n{}` }),
    () => ({ bytes: `${rnd.pick(["GARBAGE", "GET", "GET / HTTP/9.9", "\r\n\r\n", "PRI * HTTP/2.0"])}\r\n\r\n`, halfClose: true }),
    () => ({ bytes: `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nBad Header\r\n\r\n` }),
    () => ({ bytes: `GET ${target} HTTP/1.1\r\nHost: ${host}\r\n${a}`, halfClose: true }),
  ])();
}

/** A fixture whose fields name themselves, to show an endpoint's path in the report. */
const PLACEHOLDERS = new Proxy({}, { get: (_t, field) => `:${String(field)}` });

/**
 * The fixture a case is sent against: for an endpoint that deletes one of its resources (Endpoint.destroys), that
 * resource is swapped for one that does not exist, so the run keeps its fixtures (the route's refusal is fuzzed).
 */
function targetOf(e, f) {
  if (!e.destroys) return f;
  const hex = Array.from({ length: 32 }, () => "0123456789abcdef"[rnd.int(16)]).join("");
  const named = ["script", "bucket", "gateway"].includes(e.destroys);
  return { ...f, [e.destroys]: named ? `decoy-${hex.slice(0, 8)}` : hex };
}

/** Whether a 5xx is the refusal the endpoint documents for its tenant's upstream failing, in the v4 envelope. */
function isUpstreamFailure(endpoint, status, text) {
  const expected = endpoint?.upstreamFailure;
  if (!expected || expected.status !== status) return false;
  try {
    const body = JSON.parse(text);
    return body.success === false && body.errors?.[0]?.code === expected.code;
  } catch {
    return false;
  }
}

// ---- the run ----
const mock = await startMockProvider();
// The fixtures' transfer peer is a closed loopback port (api-surface.ts), allowed here as an operator would allow one.
const p = await startTestPlatform({ args: ["--provider-base-url", `openai=${mock.url}`, "--dns-peer-allow", "127.0.0.1/32"] });
const port = Number(new URL(p.url).port);
const pid = p.process.pid;
const dispatcher = new Agent({ connections: CONCURRENCY * 2, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS, connect: { timeout: TIMEOUT_MS } });
const stats = {
  seed: SEED,
  durationS: DURATION_S,
  concurrency: CONCURRENCY,
  requests: 0,
  byClass: { "2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0, other: 0 },
  fiveXX: 0,
  fiveXXByEndpoint: {},
  /** 5xx answers an endpoint documents for a failure of an upstream the tenant named (Endpoint.upstreamFailure). */
  upstreamFailures: 0,
  /** Requests without an answer within --timeout while fuzzing (the machine may just have been busy)... */
  timeouts: 0,
  /** ...and those that again got no answer when replayed alone afterwards: the hangs. */
  hangs: 0,
  socketErrors: 0,
  closedOnEmpty: 0,
  socketErrorKinds: {},
  byFamily: Object.fromEntries(FAMILIES.map((f) => [f, 0])),
  samples5xx: [],
  samplesHang: [],
  samplesSocket: [],
  serverErrors: {},
  rssMb: { start: 0, peak: 0, end: 0 },
  healthzMs: { max: 0, p99: 0 },
  afterRun: {},
};
const rssMb = () => {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0; // the process is gone: reported below
  }
};
let crashed;
let disposing = false;
p.process.once("exit", (code, signal) => {
  if (disposing) return;
  crashed = { code, signal, output: p.output().split("\n").slice(-40).join("\n") };
  say(`THE PLATFORM EXITED (code ${code}, signal ${signal}); its last output:\n${crashed.output}`);
});
try {
  say(`fuzz-api: seed ${SEED}, ${DURATION_S} s, concurrency ${CONCURRENCY}, platform ${p.url} (pid ${pid})`);
  const fixtures = await setUpAccounts(p);
  for (const e of ENDPOINTS) if (e.body === "multipart") multipartSamples.set(e, await multipartOf(e));
  stats.rssMb.start = rssMb();
  say(`accounts ${fixtures.map((f) => f.id).join(", ")}; ${ENDPOINTS.length} endpoints in ${FAMILIES.length} families`);

  const started = Date.now();
  const deadline = started + DURATION_S * 1000;
  const healthz = [];
  const monitor = setInterval(async () => {
    stats.rssMb.peak = Math.max(stats.rssMb.peak, rssMb());
    const t = performance.now();
    try {
      const r = await request(`${p.url}/healthz`, { dispatcher, headersTimeout: TIMEOUT_MS });
      await r.body.text();
      healthz.push(performance.now() - t);
    } catch {
      healthz.push(TIMEOUT_MS);
    }
  }, 1000);

  const record = (caseNo, what, status, text, endpoint) => {
    stats.requests++;
    const cls = status >= 200 && status < 600 ? `${Math.floor(status / 100)}xx` : "other";
    stats.byClass[cls] = (stats.byClass[cls] ?? 0) + 1;
    if (status >= 500 && isUpstreamFailure(endpoint, status, text)) {
      // The tenant's own upstream failed (the fixture's DNS primary refuses connections), and the answer says so.
      stats.upstreamFailures++;
    } else if (status >= 500) {
      stats.fiveXX++;
      const key = endpoint ? `${what.method ?? "raw"} ${endpoint.path(PLACEHOLDERS)}` : "raw";
      stats.fiveXXByEndpoint[key] = (stats.fiveXXByEndpoint[key] ?? 0) + 1;
      if (stats.samples5xx.length < 20) stats.samples5xx.push({ case: caseNo, ...what, status, body: String(text).slice(0, 300) });
    }
  };

  const slow = [];
  let caseNo = 0;
  const inFlight = new Map();
  const worker = async () => {
    while (Date.now() < deadline && !crashed) {
      const n = caseNo++;
      inFlight.set(n, { t: Date.now(), what: "drawing" });
      // Everything random about a case is drawn before its first await, so a seed always makes the same cases.
      const e = rnd.pick(ENDPOINTS);
      const f = targetOf(e, rnd.pick(fixtures));
      const auth = authHeaders(fixtures);
      stats.byFamily[e.family]++;
      const host = e.host?.(f);
      if (rnd.chance(0.05)) {
        const target = `${e.base === "api" ? "/client/v4" : ""}${e.path(f)}`;
        const { bytes, halfClose } = rawCase(target, host ? `${host}:${port}` : `127.0.0.1:${port}`, auth);
        inFlight.set(n, { t: Date.now(), what: `raw ${String(bytes).slice(0, 150)}` });
        const a = await rawRequest(port, bytes, TIMEOUT_MS, { halfClose });
        const what = { raw: String(bytes).slice(0, 200) };
        if (a.status === 0 && !a.closed) {
          stats.timeouts++;
          if (slow.length < 20) slow.push({ case: n, what, replay: { raw: bytes, halfClose } });
          stats.requests++;
        } else if (a.status === 0 && /^[\r\n]*$/.test(String(bytes))) {
          // Blank lines are not a request (RFC 9112 lets a server ignore them): closing without an answer is right.
          stats.requests++;
          stats.closedOnEmpty++;
        } else if (a.status === 0) {
          stats.requests++;
          if (stats.samplesSocket.length < 10) stats.samplesSocket.push({ case: n, ...what, error: a.error ?? "closed without an answer" });
          stats.socketErrors++;
          stats.socketErrorKinds[a.error ?? "closed without an answer"] = (stats.socketErrorKinds[a.error ?? "closed without an answer"] ?? 0) + 1;
        } else record(n, what, a.status, a.body, e);
        if (process.env.FUZZ_DEBUG === "2") say(`    case ${n}: raw ${a.status} ${a.error ?? ""} ${JSON.stringify(what).slice(0, 200)}`);
        inFlight.delete(n);
        continue;
      }
      const path = mutatePath(e.path(f));
      const q = query();
      const headers = { ...auth, ...extraHeaders(), ...(host ? { host: `${host}:${port}` } : {}) };
      let body;
      const kind = rnd.chance(0.1) ? rnd.pick(["json", "multipart", "raw", "none"]) : e.body;
      if (kind === "json" || kind === "opaque") {
        body = jsonBody(e.sample?.(f));
        headers["content-type"] ??= "application/json";
      } else if (kind === "multipart") {
        const m = multipartBody(e);
        body = m.body;
        headers["content-type"] ??= m.contentType;
      } else if (kind === "raw") {
        body = Buffer.from(Array.from({ length: rnd.pick([0, 10, 5000]) }, () => rnd.int(256)));
      }
      const method = rnd.chance(0.05) ? rnd.pick(["GET", "PUT", "POST", "PATCH", "DELETE", "OPTIONS", "HEAD"]) : e.method;
      const url = `${e.base === "api" ? p.apiUrl : p.url}${path}${q}`;
      const what = {
        method,
        url: url.slice(0, 300),
        headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, k === "authorization" ? "…" : String(v).slice(0, 80)])),
        bodyBytes: body === undefined ? 0 : Buffer.byteLength(body),
        bodyStart: body === undefined ? "" : Buffer.from(body).subarray(0, 80).toString("latin1"),
      };
      inFlight.set(n, { t: Date.now(), what: JSON.stringify(what).slice(0, 300) });
      try {
        // headersTimeout and bodyTimeout do not run while a request waits for a connection; the signal always does.
        const signal = AbortSignal.timeout(TIMEOUT_MS * 2);
        const res = await request(url, { method, headers, body: method === "GET" || method === "HEAD" ? undefined : body, dispatcher, signal });
        const text = await res.body.text();
        if (process.env.FUZZ_DEBUG === "2") say(`    case ${n}: ${res.statusCode} ${JSON.stringify(what).slice(0, 300)}`);
        record(n, what, res.statusCode, text, e);
      } catch (err) {
        stats.requests++;
        const code = err.code ?? err.name;
        if (process.env.FUZZ_DEBUG === "2") say(`    case ${n}: ${code} ${JSON.stringify(what).slice(0, 300)}`);
        if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "TimeoutError" || code === 23) {
          stats.timeouts++;
          if (slow.length < 20) slow.push({ case: n, what, replay: { url, method, headers, body } });
        } else {
          stats.socketErrors++;
          stats.socketErrorKinds[code] = (stats.socketErrorKinds[code] ?? 0) + 1;
          if (stats.samplesSocket.length < 10) stats.samplesSocket.push({ case: n, ...what, error: code });
        }
      }
      inFlight.delete(n);
    }
  };
  const progress = setInterval(() => {
    say(`  ${stats.requests} requests, ${stats.fiveXX} 5xx, ${stats.timeouts} timeouts, ${stats.socketErrors} socket errors, RSS ${rssMb()} MB`);
    if (process.env.FUZZ_DEBUG) say(`    pool: ${JSON.stringify(dispatcher.stats)}`);
    if (process.env.FUZZ_DEBUG) for (const [k, v] of inFlight) say(`    in flight: case ${k} since ${Math.round((Date.now() - v.t) / 1000)} s: ${v.what}`);
  }, 15_000);
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  clearInterval(progress);
  clearInterval(monitor);

  healthz.sort((a, b) => a - b);
  stats.healthzMs = { max: Math.round(healthz.at(-1) ?? 0), p99: Math.round(healthz[Math.floor(healthz.length * 0.99)] ?? 0), samples: healthz.length };
  stats.rssMb.end = rssMb();
  stats.rssMb.peak = Math.max(stats.rssMb.peak, stats.rssMb.end);

  // A request that timed out is replayed alone on a fresh connection: only one that again gets no answer is a hang
  // (a deploy under a busy machine may take longer than --timeout while the fuzzer keeps 8 requests in flight).
  for (const s of slow) {
    const t = performance.now();
    let answered = false;
    if (s.replay.raw !== undefined) {
      const a = await rawRequest(port, s.replay.raw, TIMEOUT_MS * 3, { halfClose: s.replay.halfClose });
      answered = a.status !== 0 || a.closed;
    } else {
      try {
        const { url, method, headers, body } = s.replay;
        const res = await request(url, {
          method,
          headers,
          body: method === "GET" || method === "HEAD" ? undefined : body,
          signal: AbortSignal.timeout(TIMEOUT_MS * 3),
        });
        await res.body.text();
        answered = true;
      } catch {
        answered = false;
      }
    }
    const sample = { case: s.case, ...s.what, replayMs: Math.round(performance.now() - t), answeredOnReplay: answered };
    if (!answered) stats.hangs++;
    if (stats.samplesHang.length < 20) stats.samplesHang.push(sample);
  }

  // Afterwards: still answering, still correct for a well-formed request, memory bounded.
  const h = await request(`${p.url}/healthz`, { dispatcher, headersTimeout: TIMEOUT_MS });
  await h.body.text();
  // A well-formed write and read in each account (the fuzz may have deleted the fixtures themselves).
  const valid = [];
  for (const f of fixtures) {
    const auth = { authorization: `Bearer ${f.token}`, "content-type": "application/json" };
    const made = await request(`${p.apiUrl}/accounts/${f.id}/storage/kv/namespaces`, {
      method: "POST",
      dispatcher,
      headers: auth,
      body: JSON.stringify({ title: "after-fuzz" }),
    });
    const ns = (await made.body.json()).result?.id;
    const put = await request(`${p.apiUrl}/accounts/${f.id}/storage/kv/namespaces/${ns}/values/k`, {
      method: "PUT",
      dispatcher,
      headers: { authorization: auth.authorization },
      body: "v",
    });
    await put.body.text();
    const got = await request(`${p.apiUrl}/accounts/${f.id}/storage/kv/namespaces/${ns}/values/k`, {
      dispatcher,
      headers: { authorization: auth.authorization },
    });
    valid.push(made.statusCode === 200 && put.statusCode === 200 && (await got.body.text()) === "v");
  }
  stats.afterRun = {
    healthz: h.statusCode,
    validRequest: valid.every(Boolean) ? "ok" : `failed (${JSON.stringify(valid)})`,
    rssUnderLimit: stats.rssMb.end <= RSS_LIMIT_MB,
    serverAlive: !crashed,
  };
  // What the server logged as its own failures (level 50), by message, with the request and the top of the stack
  // of the first of each: the 5xx explained.
  const requests = new Map();
  for (const line of p.logs().split("\n")) {
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      continue;
    }
    if (entry.msg === "incoming request") requests.set(entry.reqId, `${entry.req?.method} ${String(entry.req?.url).slice(0, 200)}`);
    if (entry.level !== 50) continue;
    const key = `${entry.msg}: ${entry.err?.message ?? ""}`.slice(0, 160);
    stats.serverErrors[key] ??= {
      count: 0,
      first: `${requests.get(entry.reqId) ?? "?"} | ${String(entry.err?.stack ?? "")
        .split("\n")
        .slice(0, 4)
        .join(" | ")}`,
    };
    stats.serverErrors[key].count++;
  }
} finally {
  disposing = true;
  await dispatcher.close().catch(() => {});
  await p.dispose();
  await mock.close();
}

const ok =
  stats.fiveXX === 0 &&
  stats.hangs === 0 &&
  stats.afterRun.healthz === 200 &&
  stats.afterRun.validRequest === "ok" &&
  stats.afterRun.rssUnderLimit &&
  stats.afterRun.serverAlive;
if (AS_JSON) console.log(JSON.stringify(stats, null, 2));
else {
  say(`\nseed ${SEED}: ${stats.requests} requests in ${DURATION_S} s (${Math.round(stats.requests / DURATION_S)}/s)`);
  say(
    `  by class: ${Object.entries(stats.byClass)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  );
  say(`  5xx: ${stats.fiveXX}, timeouts: ${stats.timeouts}, of them hangs (no answer on replay either): ${stats.hangs}`);
  say(`  5xx reporting a failed upstream the tenant named (a DNS primary; not counted above): ${stats.upstreamFailures}`);
  say(
    `  socket errors: ${stats.socketErrors} ${JSON.stringify(stats.socketErrorKinds)}, connections closed on a request with nothing in it: ${stats.closedOnEmpty}`,
  );
  say(
    `  by family: ${Object.entries(stats.byFamily)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ")}`,
  );
  say(`  server RSS: start ${stats.rssMb.start} MB, peak ${stats.rssMb.peak} MB, end ${stats.rssMb.end} MB (limit ${RSS_LIMIT_MB} MB)`);
  say(`  /healthz while fuzzing: p99 ${stats.healthzMs.p99} ms, max ${stats.healthzMs.max} ms over ${stats.healthzMs.samples} probes`);
  say(`  after the run: ${JSON.stringify(stats.afterRun)}`);
  for (const s of stats.samples5xx) say(`  5xx sample: ${JSON.stringify(s)}`);
  for (const s of stats.samplesHang) say(`  hang sample: ${JSON.stringify(s)}`);
  for (const s of stats.samplesSocket) say(`  socket error sample: ${JSON.stringify(s)}`);
  say(`  5xx by endpoint: ${JSON.stringify(stats.fiveXXByEndpoint)}`);
  for (const [k, v] of Object.entries(stats.serverErrors)) say(`  server error logged ${v.count}×: ${k}\n      first: ${v.first}`);
  say(ok ? "PASS" : "FAIL");
}
process.exit(ok ? 0 : 1);
