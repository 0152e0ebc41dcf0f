import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import Database from "better-sqlite3";
import { request as httpRequest, type ClientRequest, type IncomingMessage } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";

// Bulk puts through `edgecli serve`: the body streams to the writer thread as it arrives.
let p: TestPlatform;
let base: string;
before(async () => {
  p = await startTestPlatform();
  base = `/accounts/${p.accountId}/storage/kv/namespaces`;
});
after(async () => {
  await p?.dispose();
});

const newNamespace = async (title: string): Promise<string> => (await p.api("POST", base, { title })).body.result.id;
const keys = async (ns: string): Promise<string[]> => (await p.api("GET", `${base}/${ns}/keys`)).body.result.map((k: { name: string }) => k.name);

/** A bulk put sent with chunked transfer encoding (no content-length), written by the caller piece by piece. */
function openBulk(
  platform: TestPlatform,
  ns: string,
  contentType = "application/json",
): { req: ClientRequest; answer: Promise<{ status: number; body: any; headers: IncomingMessage["headers"] }> } {
  const url = new URL(`${platform.apiUrl}/accounts/${platform.accountId}/storage/kv/namespaces/${ns}/bulk`);
  const req = httpRequest(url, { method: "PUT", headers: platform.headers({ "content-type": contentType }) });
  const answer = new Promise<{ status: number; body: any; headers: IncomingMessage["headers"] }>((resolve, reject) => {
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString() || "null"), headers: res.headers }));
    });
    req.on("error", reject);
  });
  req.flushHeaders();
  return { req, answer };
}

const entry = (i: number, size = 3000) => JSON.stringify({ key: `e${i}`, value: `${i}:${"v".repeat(size)}` });

test("a chunked bulk put streams in: all written, or (with a bad last entry) nothing, with the entry named", async () => {
  const ns = await newNamespace("streamed");
  const send = async (body: string[]) => {
    const { req, answer } = openBulk(p, ns);
    req.write("[");
    for (let i = 0; i < body.length; i++) req.write(`${i ? "," : ""}${body[i]}`);
    req.end("]");
    return answer;
  };
  const good = Array.from({ length: 3000 }, (_, i) => entry(i));
  const bad = await send([...good, JSON.stringify({ key: "late", value: "v", expiration: 1 })]);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].code, 10024);
  assert.match(bad.body.errors[0].message, /^entry 3000: expiration 1 is in the past/);
  assert.deepEqual(await keys(ns), []);

  const ok = await send(good);
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.deepEqual(ok.body.result, { successful_key_count: 3000, unsuccessful_keys: [] });
  const got = await fetch(`${p.apiUrl}${base}/${ns}/values/e2999`, { headers: p.headers() });
  assert.equal(await got.text(), `2999:${"v".repeat(3000)}`);
});

test("a bulk put whose client goes away writes nothing, and the next one works", async () => {
  const ns = await newNamespace("abandoned");
  const { req, answer } = openBulk(p, ns);
  answer.catch(() => undefined);
  req.write("[");
  for (let i = 0; i < 2000; i++) req.write(`${i ? "," : ""}${entry(i)}`);
  await new Promise((r) => setTimeout(r, 200));
  req.destroy();
  const after = await p.api("PUT", `${base}/${ns}/bulk`, [{ key: "after", value: "fine" }]);
  assert.equal(after.status, 200);
  assert.deepEqual(await keys(ns), ["after"]);
});

test("a bulk put body refused: wrong type 415, empty or not an array 400, malformed 400 (6007), too large 413", async () => {
  const ns = await newNamespace("refused");
  const put = (body: string, headers: Record<string, string>) =>
    fetch(`${p.apiUrl}${base}/${ns}/bulk`, { method: "PUT", body, headers: p.headers(headers) }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as any,
    }));
  assert.equal((await put("[]", { "content-type": "text/plain" })).status, 415);
  const empty = await put("", { "content-type": "application/json" });
  assert.equal(empty.status, 400);
  assert.equal(empty.body.errors[0].code, 10001);
  assert.equal((await put('{"key":"a","value":"b"}', { "content-type": "application/json" })).body.errors[0].code, 10001);
  const malformed = await put('[{"key": "a", "value": }]', { "content-type": "application/json" });
  assert.equal(malformed.status, 400);
  assert.equal(malformed.body.errors[0].code, 6007);
  const declared = await new Promise<number>((resolve, reject) => {
    const req = httpRequest(new URL(`${p.apiUrl}${base}/${ns}/bulk`), {
      method: "PUT",
      headers: p.headers({ "content-type": "application/json", "content-length": String(101 * 1024 * 1024) }),
    });
    req.on("response", (res) => {
      res.resume();
      resolve(res.statusCode!);
      req.destroy();
    });
    req.on("error", reject);
    req.write("[");
  });
  assert.equal(declared, 413);
  assert.deepEqual(await keys(ns), []);
});

test("large bulk puts beyond the running and waiting ones get 429 (code 971, Retry-After); small ones and other writes go on", async () => {
  // A platform of its own: no bulk put of another test may hold a slot.
  const own = await startTestPlatform();
  try {
    await crowd(own);
  } finally {
    await own.dispose();
  }
});

async function crowd(p: TestPlatform): Promise<void> {
  const base = `/accounts/${p.accountId}/storage/kv/namespaces`;
  const ns = (await p.api("POST", base, { title: "crowded" })).body.result.id;
  const keys = async (): Promise<string[]> => (await p.api("GET", `${base}/${ns}/keys`)).body.result.map((k: { name: string }) => k.name);
  // 2 run and 16 wait (see LARGE_SLOTS and LARGE_QUEUE); a body of unknown length counts as large.
  const held = Array.from({ length: 21 }, () => openBulk(p, ns));
  for (const h of held) {
    h.answer.catch(() => undefined);
    h.req.write("[");
  }
  try {
    const answered: { status: number; body: any; headers: IncomingMessage["headers"] }[] = [];
    for (const h of held)
      void h.answer.then(
        (a) => answered.push(a),
        () => undefined,
      );
    for (const deadline = Date.now() + 20_000; answered.length < 3 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(
      answered.map((a) => a.status),
      [429, 429, 429],
    );
    for (const a of answered) {
      assert.equal(a.status, 429);
      assert.equal(a.body.errors[0].code, 971);
      assert.equal(a.headers["retry-after"], "5");
    }
    const single = await fetch(`${p.apiUrl}${base}/${ns}/values/single`, { method: "PUT", body: "still fine", headers: p.headers() });
    assert.equal(single.status, 200);
    // A small bulk put (its length declared, under 1 MiB) does not queue behind the large ones.
    assert.equal((await p.api("PUT", `${base}/${ns}/bulk`, [{ key: "small", value: "ok" }])).status, 200);
  } finally {
    for (const h of held) h.req.destroy();
  }
  assert.deepEqual(await keys(), ["single", "small"]);
}

test("kill -9 in the middle of a bulk put: nothing of it after the restart, and its staged values are removed", async () => {
  const stateDir = mkdtempSync(join(tmpdir(), "kv-bulk-crash-"));
  try {
    const first = await startTestPlatform({ stateDir });
    const ns = (await first.api("POST", `/accounts/${first.accountId}/storage/kv/namespaces`, { title: "crash" })).body.result.id;
    const { req, answer } = openBulk(first, ns);
    answer.catch(() => undefined);
    req.write("[");
    const db = new Database(join(stateDir, "db", "kv.sqlite"), { readonly: true });
    const staged = () => (db.prepare("SELECT count(*) AS n FROM blobs").get() as { n: number }).n;
    try {
      // Send until the platform has staged some of it (it never sees the end of the array).
      for (let i = 0; staged() === 0; i++) {
        assert.ok(i < 100_000, "nothing was staged");
        if (!req.write(`${i ? "," : ""}${entry(i)}`)) await new Promise((r) => req.once("drain", r));
      }
    } finally {
      db.close();
    }
    const exited = new Promise((r) => first.process.once("exit", r));
    first.process.kill("SIGKILL");
    await exited;
    req.destroy();

    const again = await startTestPlatform({ stateDir });
    try {
      const reader = new Database(join(stateDir, "db", "kv.sqlite"), { readonly: true });
      try {
        const left = () => (reader.prepare("SELECT (SELECT count(*) FROM blobs) + (SELECT count(*) FROM bulk_writes) AS n").get() as { n: number }).n;
        for (const deadline = Date.now() + 20_000; left() > 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 50));
        assert.equal(left(), 0, "the restart removed what the killed bulk put had staged");
      } finally {
        reader.close();
      }
      // The first start's bootstrap token is the valid one.
      const listed = await fetch(`${again.apiUrl}/accounts/${first.accountId}/storage/kv/namespaces/${ns}/keys`, { headers: first.headers() });
      assert.deepEqual(((await listed.json()) as { result: unknown }).result, []);
    } finally {
      await again.stop();
    }
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
});
