import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { statSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestPlatform, type TestPlatform } from "../testing/platform.js";

let p: TestPlatform;
before(async () => {
  p = await startTestPlatform();
});
after(async () => {
  await p?.dispose();
});

const call = async (path: string, headers: Record<string, string>) => {
  const res = await fetch(p.apiUrl + path, { headers });
  return { status: res.status, body: (await res.json()) as any };
};

test("bearer token verifies", async () => {
  const r = await call("/user/tokens/verify", { authorization: `Bearer ${p.token}` });
  assert.equal(r.status, 200);
  assert.equal(r.body.success, true);
  assert.deepEqual(r.body.errors, []);
  assert.equal(r.body.result.status, "active");
});

test("global key pair authenticates", async () => {
  const r = await call("/user", { "x-auth-email": p.email, "x-auth-key": p.apiKey });
  assert.equal(r.status, 200);
  assert.equal(r.body.result.email, p.email);
});

test("missing credentials: 400 code 9106", async () => {
  const r = await call("/user", {});
  assert.equal(r.status, 400);
  assert.equal(r.body.errors[0].code, 9106);
});

test("malformed headers: 400 code 6003 with a chain", async () => {
  const cases: [Record<string, string>, number][] = [
    [{ authorization: "Token abc" }, 6111],
    [{ "x-auth-email": "not-an-email", "x-auth-key": p.apiKey }, 6102],
    [{ "x-auth-email": p.email, "x-auth-key": "short" }, 6103],
  ];
  for (const [h, chain] of cases) {
    const r = await call("/user", h);
    assert.equal(r.status, 400, JSON.stringify(h));
    assert.equal(r.body.errors[0].code, 6003);
    assert.equal(r.body.errors[0].error_chain[0].code, chain);
  }
});

test("wrong credentials: 403 code 10000", async () => {
  const bad: Record<string, string>[] = [{ authorization: `Bearer ${"x".repeat(40)}` }, { "x-auth-email": p.email, "x-auth-key": "0".repeat(37) }];
  for (const h of bad) {
    const r = await call("/user", h);
    assert.equal(r.status, 403);
    assert.equal(r.body.errors[0].code, 10000);
    assert.equal(r.body.errors[0].message, "Authentication error");
  }
});

test("credentials.json is written with mode 0600", () => {
  const file = join(p.stateDir, "credentials.json");
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(JSON.parse(readFileSync(file, "utf8")).api_token, p.token);
});
