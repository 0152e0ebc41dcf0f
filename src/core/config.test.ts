import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseObjectStoreUrl, serveOptions } from "./config.js";
import { UserError } from "./errors.js";
import { resolvePlatformConfig } from "./server/cli/serve.js";

const KEY = Buffer.alloc(32, 7).toString("base64");

async function resolve(flags: Record<string, unknown>, env: NodeJS.ProcessEnv, toml?: string) {
  const dir = mkdtempSync(join(tmpdir(), "edge-config-"));
  try {
    if (toml !== undefined) writeFileSync(join(dir, "platform.toml"), toml);
    return await resolvePlatformConfig({ ...flags, "state-dir": dir }, new Set([...Object.keys(flags), "state-dir"]), serveOptions, env, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("the embedded default needs neither setting", async () => {
  const config = await resolve({}, {});
  assert.equal(config.core.databaseUrl, undefined);
  assert.equal(config.core.objectStore, undefined);
  assert.equal(config.core.databasePoolSize, 10);
});

test("the object store URL names a bucket, an endpoint and a region", () => {
  assert.deepEqual(parseObjectStoreUrl("s3://edge-data?endpoint=http%3A%2F%2F127.0.0.1%3A7480&region=eu-west-1"), {
    bucket: "edge-data",
    endpoint: "http://127.0.0.1:7480",
    region: "eu-west-1",
  });
  assert.deepEqual(parseObjectStoreUrl("s3://edge-data"), { bucket: "edge-data", endpoint: undefined, region: "us-east-1" });
  for (const [bad, why] of [
    ["http://bucket", /must start with s3:\/\//],
    ["s3://Bad_Bucket", /not a bucket name/],
    ["s3://bucket/some/path", /names a bucket, not a path/],
    ["s3://bucket?endpoint=ftp://x", /endpoint must be an http/],
    ["s3://bucket?secret=1", /unknown parameter "secret"/],
    ["not a url", /must look like s3:\/\/BUCKET/],
  ] as const) {
    assert.throws(
      () => parseObjectStoreUrl(bad),
      (e: unknown) => e instanceof UserError && why.test(e.message),
      bad,
    );
  }
});

test("flags, then EDGE_DATABASE_URL / EDGE_OBJECT_STORE_URL, then platform.toml choose the backends", async () => {
  const env = { EDGE_SECRETS_KEY: KEY, EDGE_DATABASE_URL: "postgres://env@db/edge", EDGE_OBJECT_STORE_URL: "s3://from-env" };
  const toml = `"database-url" = "postgres://toml@db/edge"\n"object-store-url" = "s3://from-toml"\n`;
  const fromEnv = await resolve({}, env, toml);
  assert.equal(fromEnv.core.databaseUrl, "postgres://env@db/edge");
  assert.equal(fromEnv.core.objectStore?.bucket, "from-env");
  const fromToml = await resolve({}, { EDGE_SECRETS_KEY: KEY }, toml);
  assert.equal(fromToml.core.databaseUrl, "postgres://toml@db/edge");
  assert.equal(fromToml.core.objectStore?.bucket, "from-toml");
  const fromFlag = await resolve({ "database-url": "postgres://flag@db/edge" }, env, toml);
  assert.equal(fromFlag.core.databaseUrl, "postgres://flag@db/edge");
});

test("either backend alone is allowed; a database without EDGE_SECRETS_KEY, or a bad URL, is refused with what to do", async () => {
  assert.equal((await resolve({}, { EDGE_OBJECT_STORE_URL: "s3://only-bodies" })).core.objectStore?.bucket, "only-bodies");
  assert.equal((await resolve({}, { EDGE_DATABASE_URL: "postgres://db/edge", EDGE_SECRETS_KEY: KEY })).core.objectStore, undefined);
  await assert.rejects(resolve({ "database-url": "postgres://db/edge" }, {}), (e: unknown) => {
    assert.ok(e instanceof UserError);
    assert.match(e.message, /set EDGE_SECRETS_KEY .*openssl rand -base64 32.* same value on every node/);
    return true;
  });
  await assert.rejects(resolve({ "database-url": "mysql://db/edge" }, { EDGE_SECRETS_KEY: KEY }), /must start with postgres:\/\//);
  await assert.rejects(
    resolve({ "database-url": "postgres://db/edge", "database-pool-size": 0 }, { EDGE_SECRETS_KEY: KEY }),
    /pool-size must be a whole number/,
  );
});
