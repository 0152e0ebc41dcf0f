import assert from "node:assert/strict";
import net from "node:net";
import { after, before, test } from "node:test";
import { sendRaw } from "../testing/hostile.js";
import { startTestPlatform, type TestPlatform } from "../testing/platform.js";

// Every route that takes multipart/form-data, fed bodies no well-behaved client sends: each must answer a 4xx
// v4 envelope (never a 500 or the plugin's own body) and store nothing.
let p: TestPlatform;
let routes: { name: string; path: string; method: string; stored: () => Promise<boolean> }[];
before(async () => {
  p = await startTestPlatform({ args: ["--dns-port", "0"] });
  const ns = (await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "multipart" })).body.result.id as string;
  const zone = (await p.api("POST", "/zones", { name: "multipart.example", account: { id: p.accountId } })).body.result.id as string;
  const kvKey = `/accounts/${p.accountId}/storage/kv/namespaces/${ns}/values/k`;
  const script = `/accounts/${p.accountId}/workers/scripts/malformed`;
  routes = [
    { name: "workers upload", method: "PUT", path: script, stored: async () => (await p.api("GET", script)).status !== 404 },
    { name: "KV value put", method: "PUT", path: kvKey, stored: async () => (await p.api("GET", kvKey)).status !== 404 },
    {
      name: "DNS zone import",
      method: "POST",
      path: `/zones/${zone}/dns_records/import`,
      stored: async () => (await p.api("GET", `/zones/${zone}/dns_records`)).body.result_info.total_count > 0,
    },
  ];
});
after(() => p?.dispose());

const B = "edgeboundary";
const CT = `multipart/form-data; boundary=${B}`;
const fieldPart = (name: string, value: string, headers = "") => `--${B}\r\nContent-Disposition: form-data; name="${name}"\r\n${headers}\r\n${value}\r\n`;
const whole = fieldPart("value", "v") + fieldPart("file", "www 300 IN A 192.0.2.1") + `--${B}--\r\n`;

const MALFORMED: [string, string | Buffer, string][] = [
  ["no boundary parameter", whole, "multipart/form-data"],
  ["an empty boundary", whole, "multipart/form-data; boundary="],
  ["a boundary other than the one declared", whole.replaceAll(B, "another"), CT],
  ["a boundary that never appears", "just some bytes\r\n", CT],
  ["cut off inside a part", whole.slice(0, whole.indexOf("\r\n\r\n") + 6), CT],
  ["cut off inside the part headers", `--${B}\r\nContent-Disposition: form-data; na`, CT],
  ["no closing delimiter", fieldPart("value", "v") + fieldPart("file", "x"), CT],
  ["a part without Content-Disposition", `--${B}\r\nContent-Type: text/plain\r\n\r\nv\r\n--${B}--\r\n`, CT],
  ["a part whose Content-Disposition names no field", `--${B}\r\nContent-Disposition: form-data; nxme="metadata"\r\n\r\nv\r\n--${B}--\r\n`, CT],
  ["a part header line without a colon", `--${B}\r\nthis is not a header\r\n\r\nv\r\n--${B}--\r\n`, CT],
  // busboy keeps the first 80 KiB of a part's headers and drops the rest, here the part's name with them.
  ["part headers past the size limit", `--${B}\r\nX-Pad: ${"p".repeat(100_000)}\r\nContent-Disposition: form-data; name="value"\r\n\r\nv\r\n--${B}--\r\n`, CT],
  ["a JSON field that is not JSON", fieldPart("metadata", "{not json", "Content-Type: application/json\r\n") + `--${B}--\r\n`, CT],
  ["a JSON field with a __proto__ key", fieldPart("metadata", '{"__proto__":{"x":1}}', "Content-Type: application/json\r\n") + `--${B}--\r\n`, CT],
  ["a field named __proto__", fieldPart("__proto__", "x") + `--${B}--\r\n`, CT],
  ["a field named constructor", fieldPart("constructor", "x") + `--${B}--\r\n`, CT],
  ["more parts than the route takes", Array.from({ length: 200 }, (_, i) => fieldPart(`f${i}`, "x")).join("") + `--${B}--\r\n`, CT],
  ["a field name past the name limit", fieldPart("n".repeat(5000), "x") + `--${B}--\r\n`, CT],
  ["binary garbage", Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)), CT],
];

test("malformed multipart bodies get a 4xx v4 envelope on every multipart route and store nothing", async () => {
  const failures: string[] = [];
  for (const route of routes) {
    for (const [what, body, contentType] of MALFORMED) {
      const r = await sendRaw(p, route.method, route.path, body, contentType);
      const envelope = typeof r.body === "object" && r.body.success === false && typeof r.body.errors?.[0]?.code === "number";
      if (r.status < 400 || r.status >= 500 || !envelope) failures.push(`${route.name}, ${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      if (await route.stored()) failures.push(`${route.name}, ${what}: something was stored`);
    }
  }
  assert.deepEqual(failures, []);
  assert.doesNotMatch(p.logs(), /"unexpected error"/, "no request was treated as a bug");
});

test("a field past the route's size limit is a 413, not silently truncated", async () => {
  const big = fieldPart("metadata[main_module]", "m".repeat(1024 * 1024 + 10)) + `--${B}--\r\n`;
  const r = await sendRaw(p, "PUT", routes[0].path, big, CT);
  assert.equal(r.status, 413, JSON.stringify(r.body));
  assert.equal(r.body.success, false);
});

test("a client that hangs up in the middle of a multipart body does not disturb the server", async () => {
  for (const route of routes) {
    await new Promise<void>((resolve, reject) => {
      const { hostname, port } = new URL(p.url);
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(
          `${route.method} /client/v4${route.path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${p.token}\r\n` +
            `Content-Type: ${CT}\r\nContent-Length: 100000\r\n\r\n${fieldPart("value", "partial").slice(0, 60)}`,
          () => socket.destroy(),
        );
      });
      socket.on("close", () => resolve());
      socket.on("error", reject);
    });
  }
  const health = await fetch(`${p.url}/healthz`);
  assert.equal(health.status, 200);
  for (const route of routes) assert.equal(await route.stored(), false, `${route.name}: nothing was stored`);
  assert.doesNotMatch(p.logs(), /"unexpected error"/);
});

test("a field declared application/json (curl -F 'metadata={...};type=application/json') is read as its JSON text", async () => {
  const kvKey = routes[1].path;
  const body = fieldPart("value", "v") + fieldPart("metadata", '{"owner":"curl"}', "Content-Type: application/json\r\n") + `--${B}--\r\n`;
  const r = await sendRaw(p, "PUT", kvKey, body, CT);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const meta = await p.api("GET", kvKey.replace("/values/", "/metadata/"));
  assert.deepEqual(meta.body.result, { owner: "curl" });
});
