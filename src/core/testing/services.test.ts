import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { describe, test } from "node:test";
import {
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import pg from "pg";
import {
  createBucket,
  createDatabase,
  objectStoreMissing,
  postgresMissing,
  privateObjectStore,
  privatePostgres,
  reapOrphans,
  s3ClientConfig,
  sharedPostgres,
  skipReason,
  testBucket,
  testDatabase,
  type ObjectStoreServer,
} from "./services.js";

const HANG_GUARD = { timeout: 180_000 };

async function query<T = Record<string, unknown>>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");

async function getBytes(client: S3Client, bucket: string, key: string) {
  const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

async function withClient<T>(server: ObjectStoreServer, fn: (client: S3Client) => Promise<T>): Promise<T> {
  const client = new S3Client(s3ClientConfig(server));
  try {
    return await fn(client);
  } finally {
    client.destroy();
  }
}

test("what is missing is named, with the packages to install", () => {
  const empty = mkdtempSync(join(tmpdir(), "edge-no-tools-"));
  try {
    assert.equal(postgresMissing(empty), "PostgreSQL 15 not installed (apt-get install postgresql)");
    assert.equal(
      objectStoreMissing(empty),
      "Ceph RGW not installed: no ceph-mon, ceph-osd, radosgw, radosgw-admin, ceph, monmaptool, curl (apt-get install ceph-mon ceph-osd radosgw ceph-common curl)",
    );
    for (const tool of ["ceph-mon", "ceph-osd", "radosgw", "ceph", "monmaptool", "curl"]) {
      writeFileSync(join(empty, tool), "#!/bin/sh\n");
      chmodSync(join(empty, tool), 0o755);
    }
    assert.equal(objectStoreMissing(empty), "Ceph RGW not installed: no radosgw-admin (apt-get install radosgw)");
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

test("an unavailable service is a skip reason, or a failure where services are required", () => {
  const saved = process.env.EDGE_TEST_REQUIRE_SERVICES;
  try {
    delete process.env.EDGE_TEST_REQUIRE_SERVICES;
    assert.equal(skipReason({ available: true, server: {} }), false);
    assert.equal(skipReason({ available: false, reason: "no postgres here" }), "no postgres here");
    process.env.EDGE_TEST_REQUIRE_SERVICES = "1";
    assert.throws(() => skipReason({ available: false, reason: "no postgres here" }), /no postgres here \(EDGE_TEST_REQUIRE_SERVICES=1\)/);
  } finally {
    if (saved === undefined) delete process.env.EDGE_TEST_REQUIRE_SERVICES;
    else process.env.EDGE_TEST_REQUIRE_SERVICES = saved;
  }
});

test("PostgreSQL: a database of the test's own, durable settings, dropped afterwards", HANG_GUARD, async (t) => {
  const db = await testDatabase(t);
  if (!db) return;
  assert.match(db.name, /^edge_test_[0-9a-f]{16}$/);
  assert.deepEqual(await query(db.url, "SHOW fsync"), [{ fsync: "on" }]);
  assert.deepEqual(await query(db.url, "SELECT current_setting('server_version_num')::int / 10000 AS major"), [{ major: 15 }]);
  await query(db.url, "CREATE TABLE kv (k text PRIMARY KEY, v bytea)");
  await query(db.url, "INSERT INTO kv VALUES ($1, $2)", ["a", Buffer.from([0, 1, 2])]);
  assert.deepEqual(await query(db.url, "SELECT k, v FROM kv"), [{ k: "a", v: Buffer.from([0, 1, 2]) }]);

  // Another test's database shares nothing with this one, and is gone once dropped.
  const server = await sharedPostgres();
  assert.ok(server.available);
  const other = await createDatabase(server.server);
  assert.notEqual(other.name, db.name);
  assert.deepEqual(await query(other.url, "SELECT to_regclass('kv') AS t"), [{ t: null }]);
  const lingering = new pg.Client({ connectionString: other.url });
  await lingering.connect();
  lingering.on("error", () => {}); // the drop below ends this connection
  await other.drop();
  assert.deepEqual(await query(server.server.url, "SELECT count(*)::int AS n FROM pg_database WHERE datname = $1", [other.name]), [{ n: 0 }]);
  await lingering.end().catch(() => {});
});

test("S3: a bucket of the test's own, AWS SDK round trips, dropped afterwards", HANG_GUARD, async (t) => {
  const bucket = await testBucket(t);
  if (!bucket) return;
  assert.match(bucket.name, /^edge-test-[0-9a-f]{16}$/);
  assert.equal(bucket.url, `s3://${bucket.name}?endpoint=${encodeURIComponent(bucket.server.endpoint)}&region=us-east-1`);
  await withClient(bucket.server, async (client) => {
    await client.send(new PutObjectCommand({ Bucket: bucket.name, Key: "small.txt", Body: "hello", ContentType: "text/plain" }));
    assert.equal((await getBytes(client, bucket.name, "small.txt")).toString(), "hello");

    // A streamed body of known length: RGW refuses it (411) when the SDK adds its default checksum trailer.
    const streamed = randomBytes(300_000);
    await client.send(new PutObjectCommand({ Bucket: bucket.name, Key: "streamed.bin", Body: Readable.from([streamed]), ContentLength: streamed.length }));
    assert.equal(md5(await getBytes(client, bucket.name, "streamed.bin")), md5(streamed));

    // lib-storage's Upload of a stream of unknown length: a multipart upload of three parts.
    const large = randomBytes(12 * 1024 * 1024);
    const chunks = Array.from({ length: 12 }, (_, i) => large.subarray(i * 1024 * 1024, (i + 1) * 1024 * 1024));
    const upload = new Upload({ client, params: { Bucket: bucket.name, Key: "dir/large.bin", Body: Readable.from(chunks) }, partSize: 5 * 1024 * 1024 });
    await upload.done();
    // (RGW 16 answers CompleteMultipartUpload with an empty ETag; HEAD has it.)
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket.name, Key: "dir/large.bin" }));
    assert.match(head.ETag ?? "", /-3"$/, "a multipart ETag of 3 parts");
    assert.equal(md5(await getBytes(client, bucket.name, "dir/large.bin")), md5(large));

    const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket.name }));
    assert.deepEqual(
      listed.Contents?.map((o) => [o.Key, o.Size]),
      [
        ["dir/large.bin", large.length],
        ["small.txt", 5],
        ["streamed.bin", streamed.length],
      ],
    );

    // Another test's bucket is empty, and dropping one with objects and an unfinished upload removes it.
    const other = await createBucket(bucket.server);
    assert.equal((await client.send(new ListObjectsV2Command({ Bucket: other.name }))).KeyCount, 0);
    await client.send(new PutObjectCommand({ Bucket: other.name, Key: "x", Body: "x" }));
    await client.send(new CreateMultipartUploadCommand({ Bucket: other.name, Key: "unfinished" }));
    await other.drop();
    await assert.rejects(client.send(new HeadBucketCommand({ Bucket: other.name })), (e: Error & { $metadata?: { httpStatusCode?: number } }) => {
      assert.equal(e.$metadata?.httpStatusCode, 404);
      return true;
    });
  });
});

/**
 * Runs, in a child Node process without the test run's service variables, a module that asks for this process's
 * PostgreSQL and prints it as JSON. `killed`: the child is then killed with SIGKILL instead of exiting.
 */
function childWithOwnPostgres(opts: { killed: boolean }): Promise<{ url: string; dir: string; answer: number; same: boolean }> {
  const servicesModule = new URL("./services.js", import.meta.url).href;
  const source = `
    import pg from "pg";
    import { sharedPostgres } from ${JSON.stringify(servicesModule)};
    const service = await sharedPostgres();
    if (!service.available) throw new Error(service.reason);
    const again = await sharedPostgres();
    const client = new pg.Client({ connectionString: service.server.url });
    await client.connect();
    const { rows } = await client.query("SELECT 41 + 1 AS answer");
    await client.end();
    console.log(JSON.stringify({ ...service.server, answer: rows[0].answer, same: again === service }));
    if (${opts.killed}) setInterval(() => {}, 1000);
  `;
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EDGE_TEST_")));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", source], { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (opts.killed && out.endsWith("\n")) child.kill("SIGKILL");
    });
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (code === 0 || (opts.killed && signal === "SIGKILL" && out)) resolve(JSON.parse(out));
      else reject(new Error(`child exited with ${code ?? signal}: ${err}`));
    });
  });
}

// These start servers of their own, seconds each: side by side.
describe("servers of a process or a test of its own", { concurrency: true }, () => {
  test("a test process without the variables starts its own PostgreSQL and removes it when it exits", HANG_GUARD, async (t) => {
    const missing = postgresMissing();
    if (missing) return t.skip(skipReason({ available: false, reason: missing }) as string);
    const child = await childWithOwnPostgres({ killed: false });
    assert.equal(child.answer, 42);
    assert.ok(child.same, "one server per process");
    assert.ok(child.dir, "the process started it");
    assert.equal(existsSync(dirname(child.dir)), false, "its directory is removed at exit");
    await assert.rejects(query(child.url, "SELECT 1"), /ECONNREFUSED/);
  });

  test("a PostgreSQL left behind by a killed test process is stopped and removed by the next start", HANG_GUARD, async (t) => {
    const missing = postgresMissing();
    if (missing) return t.skip(skipReason({ available: false, reason: missing }) as string);
    const child = await childWithOwnPostgres({ killed: true });
    assert.equal(child.answer, 42);
    reapOrphans(); // what starting any server does first
    assert.equal(existsSync(dirname(child.dir)), false);
    await assert.rejects(query(child.url, "SELECT 1"), /ECONNREFUSED/);
  });

  test("a private PostgreSQL stopped as by a crash starts again with every committed row", HANG_GUARD, async (t) => {
    const server = await privatePostgres(t);
    if (!server) return;
    await query(server.url, "CREATE TABLE t (n int)");
    await query(server.url, "INSERT INTO t SELECT generate_series(1, 100)");
    server.stop({ immediate: true });
    await assert.rejects(query(server.url, "SELECT 1"), /ECONNREFUSED/);
    await server.start();
    assert.deepEqual(await query(server.url, "SELECT count(*)::int AS n FROM t"), [{ n: 100 }]);
  });

  test("a private object store's gateway stops and starts again, its objects kept", HANG_GUARD, async (t) => {
    const server = await privateObjectStore(t);
    if (!server) return;
    const bucket = await createBucket(server);
    await withClient(server, async (client) => {
      await client.send(new PutObjectCommand({ Bucket: bucket.name, Key: "kept", Body: "still here" }));
      server.stopGateway();
      await assert.rejects(fetch(server.endpoint), /fetch failed/);
      await server.startGateway();
      assert.equal((await getBytes(client, bucket.name, "kept")).toString(), "still here");
    });
    await bucket.drop();
  });
});
