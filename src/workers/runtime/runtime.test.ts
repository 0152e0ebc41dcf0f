import assert from "node:assert/strict";
import { once } from "node:events";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { connect } from "node:net";
import { after, before, test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { hit, logEntries, uploadScript, startPlatform } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(() => p?.dispose());

const versioned = (v: string) => `
export default {
  async fetch(req, env) {
    const url = new URL(req.url);
    if (url.pathname === "/slow") await new Promise((r) => setTimeout(r, 400));
    if (url.pathname === "/log") console.log("log line from the script", url.searchParams.get("m"));
    return new Response("${v} " + (env.TOKEN ?? "-"));
  },
};`;

const livePid = (script: string): number | undefined =>
  logEntries(p)
    .filter((e) => e.script === script && (e.msg === "worker version live" || e.msg === "workerd restarted"))
    .map((e) => e.workerd_pid as number)
    .at(-1);

test("a KV binding reads and writes the platform's namespace through real workerd", async () => {
  const ns = await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "runtime-kv" });
  assert.equal(ns.status, 200);
  const id = ns.body.result.id as string;
  const code = `export default { async fetch(req, env) {
    const key = decodeURIComponent(new URL(req.url).pathname.slice(1));
    if (req.method === "PUT") { await env.KV.put(key, await req.text(), { metadata: { by: "script" } }); return new Response("stored"); }
    if (key === "") return Response.json((await env.KV.list()).keys.map((k) => k.name));
    const { value, metadata } = await env.KV.getWithMetadata(key);
    return value === null ? new Response("none", { status: 404 }) : Response.json({ value, metadata });
  } };`;
  const up = await uploadScript(p, "kv-script", code, { bindings: [{ type: "kv_namespace", name: "KV", namespace_id: id }] });
  assert.equal(up.status, 200, JSON.stringify(up.body));
  assert.equal((await hit(p, "kv-script", "/caf%C3%A9", { method: "PUT", body: "au lait" })).text, "stored");
  assert.deepEqual(JSON.parse((await hit(p, "kv-script", "/caf%C3%A9")).text), { value: "au lait", metadata: { by: "script" } });
  assert.deepEqual(JSON.parse((await hit(p, "kv-script", "/")).text), ["café"]);
  // The same entry through the v4 API: one store.
  const viaApi = await p.api("GET", `/accounts/${p.accountId}/storage/kv/namespaces/${id}/values/${encodeURIComponent("café")}`);
  assert.equal(viaApi.body, "au lait");
  assert.equal((await hit(p, "kv-script", "/nothing")).status, 404);
});

test("method, path, query, headers and body reach the script intact, and its answer comes back", async () => {
  const code = `export default { async fetch(req) {
    const body = await req.text();
    return new Response(JSON.stringify({ method: req.method, url: req.url, h: req.headers.get("x-test"), body }), { status: 201, headers: { "x-from-script": "yes" } });
  } };`;
  assert.equal((await uploadScript(p, "echo", code)).status, 200);
  const r = await hit(p, "echo", "/a/b%20c?x=1&y=%C3%A9", { method: "POST", body: "payload", headers: { "x-test": "v" } });
  assert.equal(r.status, 201);
  assert.equal(r.headers["x-from-script"], "yes");
  const seen = JSON.parse(r.text);
  assert.equal(seen.method, "POST");
  assert.equal(seen.h, "v");
  assert.equal(seen.body, "payload");
  assert.match(seen.url, /^http:\/\/echo\.workers\.localhost(:\d+)?\/a\/b%20c\?x=1&y=%C3%A9$/);
  const missing = await hit(p, "no-such-script", "/");
  assert.equal(missing.status, 404);
  assert.match(missing.text, /No worker/);
});

test("headers the client's Connection header names are not passed on to the script; the others are", async () => {
  const code = `export default { fetch(req) { return Response.json({ hop: req.headers.get("x-hop"), keep: req.headers.get("x-keep") }); } };`;
  assert.equal((await uploadScript(p, "hop-by-hop", code)).status, 200);
  const port = Number(new URL(p.url).port);
  // A raw request: HTTP clients refuse to send a Connection header listing other headers.
  const raw = await new Promise<string>((resolve, reject) => {
    const s = connect(port, "127.0.0.1", () =>
      s.write(`GET / HTTP/1.1\r\nHost: hop-by-hop.workers.localhost:${port}\r\nConnection: close, X-Hop\r\nX-Hop: private\r\nX-Keep: public\r\n\r\n`),
    );
    let got = "";
    s.on("data", (d) => (got += d));
    s.on("end", () => resolve(got));
    s.on("error", reject);
  });
  assert.match(raw, /^HTTP\/1\.1 200/);
  assert.deepEqual(JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4)), { hop: null, keep: "public" });
});

test("bodies stream through the edge both ways, as they go; a client cannot set cf-connecting-ip, nor pass a plain request for HTTPS", async () => {
  const code = `export default { async fetch(req) {
    const path = new URL(req.url).pathname;
    if (path === "/echo") return new Response(req.body, { headers: { "x-ip": req.headers.get("cf-connecting-ip"), "x-url": req.url } });
    if (path === "/count") { let n = 0; for await (const c of req.body) n += c.byteLength; return Response.json({ n }); }
    let left = 64;
    return new Response(new ReadableStream({ pull(c) { if (left-- === 0) c.close(); else c.enqueue(new Uint8Array(128 * 1024).fill(7)); } }));
  } };`;
  assert.equal((await uploadScript(p, "streamer", code)).status, 200);
  const port = Number(new URL(p.url).port);
  const send = (method: string, path: string, headers: Record<string, string> = {}) =>
    httpRequest({ host: "127.0.0.1", port, method, path, headers: { host: `streamer.workers.localhost:${port}`, ...headers } });

  // The answer's first part comes back while the request body is still open: nothing waits for the whole.
  const echo = send("POST", "/echo", { "cf-connecting-ip": "203.0.113.9", "x-forwarded-proto": "https" });
  echo.write("first|");
  const [res] = (await once(echo, "response")) as [IncomingMessage];
  assert.equal(res.headers["x-ip"], "127.0.0.1", "the proxy sets the client address itself");
  assert.match(String(res.headers["x-url"]), /^http:\/\/streamer\.workers\.localhost/, "the plain port's requests are http://, whatever the client says");
  const [first] = (await once(res, "data")) as [Buffer];
  assert.equal(first.toString(), "first|");
  echo.end("second");
  let rest = "";
  for await (const c of res) rest += c;
  assert.equal(rest, "second");

  // Several MiB each way, chunked upload and a generated answer of unknown length.
  const up = send("PUT", "/count");
  for (let i = 0; i < 32; i++) up.write(Buffer.alloc(256 * 1024, i));
  up.end();
  const [counted] = (await once(up, "response")) as [IncomingMessage];
  let json = "";
  for await (const c of counted) json += c;
  assert.deepEqual(JSON.parse(json), { n: 8 * 1024 * 1024 });
  const down = send("GET", "/big");
  down.end();
  const [big] = (await once(down, "response")) as [IncomingMessage];
  let n = 0;
  for await (const c of big) n += (c as Buffer).length;
  assert.equal(n, 8 * 1024 * 1024);
});

test("console.log of a script reaches the platform log tagged with the script name", async () => {
  assert.equal((await uploadScript(p, "logger", versioned("v1"))).status, 200);
  await hit(p, "logger", "/log?m=marker-1234");
  await eventually(() => logEntries(p).some((e) => e.script === "logger" && String(e.msg).includes("marker-1234")), "the script's log line");
});

test("a redeploy and a secret change switch versions without dropping a request", async () => {
  assert.equal((await uploadScript(p, "rolling", versioned("v1"))).status, 200);
  assert.equal((await hit(p, "rolling", "/")).text, "v1 -");
  const slow = hit(p, "rolling", "/slow"); // in flight on v1 while v2 replaces it
  let stop = false;
  const seen: string[] = [];
  const failures: string[] = [];
  const load = Array.from({ length: 4 }, async () => {
    while (!stop) {
      const r = await hit(p, "rolling", "/").catch((e: Error) => ({ status: 0, text: e.message }));
      if (r.status === 200) seen.push(r.text);
      else failures.push(`${r.status} ${r.text}`);
    }
  });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal((await uploadScript(p, "rolling", versioned("v2"))).status, 200);
  const secret = await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/rolling/secrets`, { name: "TOKEN", text: "t-1", type: "secret_text" });
  assert.equal(secret.status, 200);
  await new Promise((r) => setTimeout(r, 100));
  stop = true;
  await Promise.all(load);
  const slowRes = await slow;
  assert.equal(slowRes.status, 200);
  assert.equal(slowRes.text, "v1 -", "the request in flight finished on the old version");
  assert.deepEqual(failures, []);
  assert.ok(seen.includes("v1 -") || seen.includes("v2 -"));
  assert.equal(seen.at(-1), "v2 t-1");
  assert.equal((await hit(p, "rolling", "/")).text, "v2 t-1");
});

test("a script workerd refuses is rejected at upload and the previous version keeps serving", async () => {
  assert.equal((await uploadScript(p, "stable", versioned("good"))).status, 200);
  const bad = await uploadScript(p, "stable", "export default { fetch( { syntax error");
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].code, 10021);
  assert.match(bad.body.errors[0].message, /failed to start/);
  assert.equal((await hit(p, "stable", "/")).text, "good -");
  const neverStarted = await uploadScript(p, "never-started", "export default { fetch( {");
  assert.equal(neverStarted.status, 400);
  assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/scripts/never-started/settings`)).status, 404);
});

test("a workerd that dies is restarted, the event is logged, and requests are served again", async () => {
  assert.equal((await uploadScript(p, "crashy", versioned("alive"))).status, 200);
  // The log line travels through a pipe; it may land just after the upload's answer.
  await eventually(() => livePid("crashy") !== undefined, "the live workerd pid in the log");
  const pid = livePid("crashy");
  process.kill(pid!, "SIGKILL");
  await eventually(() => logEntries(p).some((e) => e.script === "crashy" && e.msg === "workerd exited unexpectedly; restarting it"), "the crash log");
  const r = await hit(p, "crashy", "/");
  assert.equal(r.status, 200);
  assert.equal(r.text, "alive -");
  await eventually(() => livePid("crashy") !== pid, "the restart log");
});

test("deleting a script stops serving it", async () => {
  assert.equal((await uploadScript(p, "short-lived", versioned("x"))).status, 200);
  assert.equal((await hit(p, "short-lived", "/")).status, 200);
  const del = await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/short-lived`);
  assert.equal(del.status, 200);
  assert.equal((await hit(p, "short-lived", "/")).status, 404);
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/short-lived`)).status, 404);
});

test("vars and secrets with quotes, backslashes, newlines and non-ASCII reach the script byte for byte", async () => {
  const tricky = 'a "quoted" \\ back\nslash ), text = ("x") é€🙂';
  const code = `export default { fetch(req, env) { return Response.json({ v: env.V, s: env.S }); } };`;
  assert.equal((await uploadScript(p, "tricky", code, { bindings: [{ type: "plain_text", name: "V", text: tricky }] })).status, 200);
  const put = await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/tricky/secrets`, { name: "S", text: tricky, type: "secret_text" });
  assert.equal(put.status, 200);
  assert.deepEqual(JSON.parse((await hit(p, "tricky", "/")).text), { v: tricky, s: tricky });
});

test("after a platform restart every stored script serves again, with its secrets", async () => {
  await p.stop();
  const again = await startTestPlatform({ stateDir: p.stateDir, args: ["--dns-port", "0"] });
  try {
    assert.equal((await hit(again, "rolling", "/")).text, "v2 t-1");
    assert.equal((await hit(again, "stable", "/")).text, "good -");
  } finally {
    await again.stop();
  }
});
