import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseObjectStoreUrl, readCoreConfig, serveOptions } from "./config.js";
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

/** Core's settings from the defaults, with `changes` as if given as flags. */
function coreWith(changes: Record<string, unknown>) {
  const defaults = Object.fromEntries(Object.entries(serveOptions).map(([name, spec]) => [name, "default" in spec ? spec.default : undefined]));
  return readCoreConfig({ ...defaults, ...changes } as Parameters<typeof readCoreConfig>[0]);
}

test("the edge port's client limits: defaults, loopback exempt unless 'none', and bad values refused with the flag", () => {
  const core = coreWith({});
  assert.deepEqual([core.bodyMinBytesPerSecond, core.headTimeoutMs, core.connections.max, core.connections.perClientMax], [500, 66_000, 16_384, 256]);
  assert.equal(core.connections.perClientExempt.check("127.0.0.9", "ipv4"), true);
  assert.equal(core.connections.perClientExempt.check("::1", "ipv6"), true);
  assert.equal(core.connections.perClientExempt.check("192.0.2.1", "ipv4"), false);
  const none = coreWith({ "edge-max-connections-per-client-exempt": ["none"] });
  assert.equal(none.connections.perClientExempt.check("127.0.0.1", "ipv4"), false);
  const proxies = coreWith({ "edge-max-connections-per-client-exempt": ["10.1.0.0/16,2001:db8::7"] });
  assert.equal(proxies.connections.perClientExempt.check("10.1.200.3", "ipv4"), true);
  assert.equal(proxies.connections.perClientExempt.check("2001:db8::7", "ipv6"), true);
  assert.equal(coreWith({ "body-min-rate": 0 }).bodyMinBytesPerSecond, 0);
  for (const [flag, value] of [
    ["body-min-rate", -1],
    ["body-min-rate", 1.5],
    ["request-head-timeout", 0],
    ["edge-max-connections", 0],
    ["edge-max-connections-per-client", 2.5],
    ["edge-max-connections-per-client-exempt", ["10.0.0.0/33"]],
    ["edge-max-connections-per-client-exempt", ["10.0.0.0/8x"]],
    ["edge-max-connections-per-client-exempt", ["proxy.example"]],
  ] as const) {
    assert.throws(
      () => coreWith({ [flag]: value }),
      (e: unknown) => e instanceof UserError && e.message.startsWith(`--${flag}`),
      `${flag} ${String(value)}`,
    );
  }
});
