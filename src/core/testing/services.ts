/**
 * Real PostgreSQL 15 and a real S3 object store (one-node Ceph RGW) for tests, started by the project's own
 * scripts (scripts/services/). Test-only code.
 *
 * Where the servers come from, in this order:
 *  1. EDGE_TEST_DATABASE_URL / EDGE_TEST_S3_ENDPOINT, _ACCESS_KEY_ID, _SECRET_ACCESS_KEY: servers someone started;
 *     `scripts/run-tests.mjs` starts one of each before a test run and sets these for every test process.
 *  2. EDGE_TEST_DATABASE_UNAVAILABLE / EDGE_TEST_S3_UNAVAILABLE: the run could not start them; the value says why.
 *  3. Otherwise the first test of the process that asks starts its own (when the binaries are installed), in a
 *     temporary directory removed when the process exits.
 * A service that cannot be had gives a reason naming what is missing; tests skip with it, unless
 * EDGE_TEST_REQUIRE_SERVICES=1 (set by .ci/run), where it fails them instead, so CI never skips silently.
 *
 * Tests never share state: each takes a fresh database (`testDatabase`) or bucket (`testBucket`), dropped after it.
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, chmodSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import type { TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import type { S3Client, S3ClientConfig } from "@aws-sdk/client-s3";

const SCRIPTS = fileURLToPath(new URL("../../../scripts/services/", import.meta.url));
export const POSTGRES_BIN = "/usr/lib/postgresql/15/bin";
/** RGW takes any region in a signature; this is the one the SDKs default to. */
export const S3_REGION = "us-east-1";

export interface PostgresServer {
  /** The superuser's URL (database `postgres`). */
  url: string;
  /** The directory the server runs in, when this process started it. */
  dir?: string;
}

export interface ObjectStoreServer {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  dir?: string;
}

export type Service<T> = { available: true; server: T } | { available: false; reason: string };

// ---- what is installed ----------------------------------------------------------------------------------

const executable = (path: string) => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};
const onPath = (command: string, path: string) => path.split(delimiter).some((dir) => dir !== "" && executable(join(dir, command)));

/** Why PostgreSQL 15 cannot be started here, or undefined when it can. */
export function postgresMissing(binDir = POSTGRES_BIN): string | undefined {
  if (!["initdb", "pg_ctl", "postgres"].every((tool) => executable(join(binDir, tool)))) {
    return "PostgreSQL 15 not installed (apt-get install postgresql)";
  }
  // As root the scripts run the server as `postgres`: PostgreSQL refuses to run as root.
  if (process.getuid?.() === 0 && spawnSync("id", ["-u", "postgres"], { stdio: "ignore" }).status !== 0) {
    return "no 'postgres' user to run PostgreSQL 15 as (apt-get install postgresql creates it)";
  }
  return undefined;
}

/** The commands rgw-up.sh runs, and the Debian package of each. */
const RGW_COMMANDS: Record<string, string> = {
  "ceph-mon": "ceph-mon",
  "ceph-osd": "ceph-osd",
  radosgw: "radosgw",
  "radosgw-admin": "radosgw",
  ceph: "ceph-common",
  monmaptool: "ceph-common",
  curl: "curl",
};

/** Why a Ceph RGW cannot be started here, or undefined when it can. */
export function objectStoreMissing(path = process.env.PATH ?? ""): string | undefined {
  const missing = Object.keys(RGW_COMMANDS).filter((command) => !onPath(command, path));
  if (missing.length === 0) return undefined;
  const packages = [...new Set(missing.map((command) => RGW_COMMANDS[command]))];
  return `Ceph RGW not installed: no ${missing.join(", ")} (apt-get install ${packages.join(" ")})`;
}

// ---- starting and stopping servers with the scripts -----------------------------------------------------

/** Runs a script of scripts/services and returns its `KEY=VALUE KEY=VALUE` line as an object. */
function runUpScript(script: string, dir: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    // Tests never install packages: what is missing becomes a skip reason instead.
    const child = spawn("bash", [join(SCRIPTS, script), dir], { env: { ...process.env, EDGE_SERVICES_INSTALL: "0" }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const line = stdout.trim().split("\n").pop() ?? "";
      if (code !== 0 || !line.includes("=")) return reject(new Error(`${script} failed (exit ${code}): ${stderr.trim().split("\n").slice(-12).join("\n")}`));
      resolve(Object.fromEntries(line.split(" ").map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)])));
    });
  });
}

function runDownScript(script: string, dir: string, ...args: string[]) {
  const r = spawnSync("bash", [join(SCRIPTS, script), dir, ...args], { stdio: ["ignore", "ignore", "pipe"], timeout: 120_000 });
  if (r.status !== 0) throw new Error(`${script} ${dir} failed (exit ${r.status}): ${r.stderr?.toString().trim()}`);
}

/** Server directories this process started and has not stopped yet, each with its teardown. */
const running = new Map<string, () => void>();
let exitHooked = false;
function stopAtExit(dir: string, stop: () => void) {
  running.set(dir, stop);
  if (exitHooked) return;
  exitHooked = true;
  const stopAll = () => {
    for (const [d, s] of running) {
      running.delete(d);
      try {
        s();
      } catch (e) {
        process.stderr.write(`test services: ${(e as Error).message}\n`);
      }
    }
  };
  process.on("exit", stopAll);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      stopAll();
      process.kill(process.pid, signal);
    });
  }
}

/** `PID STARTTIME` of a process (its start time tells a reused pid apart), or undefined when it is gone. */
function processIdentity(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 22, counted after the command name in parentheses (which may contain spaces).
    return `${pid} ${stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]}`;
  } catch {
    return undefined;
  }
}

/** Each kind of server: its scripts, and the temporary directory it runs in (`/tmp/<prefix>XXXXXX/<subdir>`). */
const KINDS = {
  postgres: { prefix: "edge-postgres-", subdir: "pg", up: "pg-up.sh", down: "pg-down.sh", missing: () => postgresMissing() },
  rgw: { prefix: "edge-rgw-", subdir: "s3", up: "rgw-up.sh", down: "rgw-down.sh", missing: () => objectStoreMissing() },
} as const;
type Kind = keyof typeof KINDS;

/**
 * A temporary directory for a server, owned by this process: the `postgres` user can pass through it
 * (mkdtemp makes it 0700 and root's), and its `owner` file names this process, so that a later start can stop
 * servers whose process was killed before it could (see `reapOrphans`).
 */
function serviceDir(kind: Kind) {
  reapOrphans();
  const dir = mkdtempSync(join(tmpdir(), KINDS[kind].prefix));
  chmodSync(dir, 0o711);
  writeFileSync(join(dir, "owner"), processIdentity(process.pid) ?? "");
  return join(dir, KINDS[kind].subdir);
}

/** Stops the servers, and removes the directories, of processes that died without doing it. */
export function reapOrphans() {
  for (const kind of Object.keys(KINDS) as Kind[]) {
    for (const name of readdirSync(tmpdir())) {
      if (!name.startsWith(KINDS[kind].prefix)) continue;
      const base = join(tmpdir(), name);
      let owner: string;
      try {
        owner = readFileSync(join(base, "owner"), "utf8");
      } catch {
        continue; // being created, or not ours
      }
      if (owner === "" || processIdentity(Number(owner.split(" ")[0])) === owner) continue;
      try {
        runDownScript(KINDS[kind].down, join(base, KINDS[kind].subdir));
        rmSync(base, { recursive: true, force: true });
      } catch (e) {
        process.stderr.write(`test services: could not clean up ${base}: ${(e as Error).message}\n`);
      }
    }
  }
}

/** Starts a server of this process's own in a new temporary directory, stopped at exit at the latest. */
async function startServer(kind: Kind): Promise<{ dir: string; env: Record<string, string>; dispose(): void }> {
  const missing = KINDS[kind].missing();
  if (missing) throw new Error(missing);
  const dir = serviceDir(kind);
  const dispose = () => {
    running.delete(dir);
    runDownScript(KINDS[kind].down, dir);
    rmSync(dirname(dir), { recursive: true, force: true });
  };
  try {
    const env = await runUpScript(KINDS[kind].up, dir);
    stopAtExit(dir, dispose);
    return { dir, env, dispose };
  } catch (e) {
    dispose();
    throw e;
  }
}

export interface PostgresInstance extends PostgresServer {
  dir: string;
  /** Stops the server and keeps its data (`immediate`: without a clean shutdown, as a crash would). */
  stop(opts?: { immediate?: boolean }): void;
  /** Starts a stopped server again: same data, port and password. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  dispose(): void;
}

/** Starts a PostgreSQL 15 server of this process's own; throws (with what is missing) if it cannot. */
export async function startPostgres(): Promise<PostgresInstance> {
  const { dir, env, dispose } = await startServer("postgres");
  return {
    url: env.EDGE_TEST_DATABASE_URL,
    dir,
    stop: (opts = {}) => runDownScript("pg-down.sh", dir, "--keep-data", ...(opts.immediate ? ["--immediate"] : [])),
    start: async () => void (await runUpScript("pg-up.sh", dir)),
    dispose,
  };
}

export interface ObjectStoreInstance extends ObjectStoreServer {
  dir: string;
  /** Stops only the gateway: S3 requests fail, the cluster keeps the objects. */
  stopGateway(): void;
  /** Starts the gateway again on the same port. */
  startGateway(): Promise<void>;
  /** Stops the cluster and removes its directory (its objects lived in RAM). */
  dispose(): void;
}

/** Starts a one-node Ceph RGW of this process's own; throws (with what is missing) if it cannot. */
export async function startObjectStore(): Promise<ObjectStoreInstance> {
  const { dir, env, dispose } = await startServer("rgw");
  return {
    ...objectStoreFromEnv(env)!,
    dir,
    stopGateway: () => runDownScript("rgw-down.sh", dir, "--gateway-only"),
    startGateway: async () => void (await runUpScript("rgw-up.sh", dir)),
    dispose,
  };
}

/** The variables that name an object store to the test processes (read back by `objectStoreFromEnv`). */
export function objectStoreEnvVars(server: ObjectStoreServer): Record<string, string> {
  return { EDGE_TEST_S3_ENDPOINT: server.endpoint, EDGE_TEST_S3_ACCESS_KEY_ID: server.accessKeyId, EDGE_TEST_S3_SECRET_ACCESS_KEY: server.secretAccessKey };
}

function objectStoreFromEnv(env: Record<string, string | undefined>): ObjectStoreServer | undefined {
  const { EDGE_TEST_S3_ENDPOINT: endpoint, EDGE_TEST_S3_ACCESS_KEY_ID: accessKeyId, EDGE_TEST_S3_SECRET_ACCESS_KEY: secretAccessKey } = env;
  if (!endpoint || !accessKeyId || !secretAccessKey) return undefined;
  return { endpoint, accessKeyId, secretAccessKey, region: S3_REGION };
}

// ---- the servers of this process (shared by its tests) --------------------------------------------------

async function resolveService<T>(
  fromEnv: T | undefined,
  unavailable: string | undefined,
  missing: () => string | undefined,
  start: () => Promise<T>,
  what: string,
): Promise<Service<T>> {
  if (fromEnv) return { available: true, server: fromEnv };
  if (unavailable) return { available: false, reason: unavailable };
  const reason = missing();
  if (reason) return { available: false, reason };
  try {
    return { available: true, server: await start() };
  } catch (e) {
    return { available: false, reason: `${what} could not be started: ${(e as Error).message}` };
  }
}

let postgresService: Promise<Service<PostgresServer>> | undefined;
let objectStoreService: Promise<Service<ObjectStoreServer>> | undefined;

/** The PostgreSQL server of this test process (see the file's comment for where it comes from). */
export function sharedPostgres(): Promise<Service<PostgresServer>> {
  const url = process.env.EDGE_TEST_DATABASE_URL;
  postgresService ??= resolveService<PostgresServer>(
    url ? { url } : undefined,
    process.env.EDGE_TEST_DATABASE_UNAVAILABLE,
    postgresMissing,
    startPostgres,
    "PostgreSQL 15",
  );
  return postgresService;
}

/** The S3 object store of this test process (see the file's comment for where it comes from). */
export function sharedObjectStore(): Promise<Service<ObjectStoreServer>> {
  objectStoreService ??= resolveService<ObjectStoreServer>(
    objectStoreFromEnv(process.env),
    process.env.EDGE_TEST_S3_UNAVAILABLE,
    objectStoreMissing,
    startObjectStore,
    "Ceph RGW",
  );
  return objectStoreService;
}

const servicesRequired = () => process.env.EDGE_TEST_REQUIRE_SERVICES === "1";

/**
 * For `describe(name, { skip: skipReason(service) }, ...)` and `test(name, { skip: ... })`: false when the
 * service is there, the reason otherwise. Throws instead when EDGE_TEST_REQUIRE_SERVICES=1.
 */
export function skipReason(service: Service<unknown>): string | false {
  if (service.available) return false;
  if (servicesRequired()) throw new Error(`${service.reason} (EDGE_TEST_REQUIRE_SERVICES=1)`);
  return service.reason;
}

/** The server, or undefined after skipping the test (or failing it when EDGE_TEST_REQUIRE_SERVICES=1). */
function serverOrSkip<T>(t: TestContext, service: Service<T>): T | undefined {
  return skippedForMissing(t, service.available ? undefined : service.reason) ? undefined : (service as { server: T }).server;
}

function skippedForMissing(t: TestContext, missing: string | undefined): boolean {
  if (missing === undefined) return false;
  t.skip(skipReason({ available: false, reason: missing }) as string);
  return true;
}

// ---- a database per test --------------------------------------------------------------------------------

export interface TestDatabase {
  name: string;
  /** The superuser's URL for this database. */
  url: string;
  /** Drops the database, closing whatever connections are left. */
  drop(): Promise<void>;
}

async function adminQuery(url: string, sql: string) {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Creates `edge_test_<random>` on the server. */
export async function createDatabase(server: PostgresServer): Promise<TestDatabase> {
  const name = `edge_test_${randomBytes(8).toString("hex")}`;
  await adminQuery(server.url, `CREATE DATABASE ${name}`);
  const url = new URL(server.url);
  url.pathname = `/${name}`;
  return { name, url: url.href, drop: () => adminQuery(server.url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * A fresh database on this process's PostgreSQL, dropped after the test; undefined when the test was skipped
 * because PostgreSQL is not available: `const db = await testDatabase(t); if (!db) return;`
 */
export function testDatabase(t: TestContext): Promise<TestDatabase | undefined> {
  return createForTest(t, sharedPostgres(), createDatabase);
}

/** Something made on a shared server for one test and dropped after it; undefined when the test was skipped. */
async function createForTest<S, R extends { drop(): Promise<void> }>(t: TestContext, service: Promise<Service<S>>, create: (server: S) => Promise<R>) {
  const server = serverOrSkip(t, await service);
  if (!server) return undefined;
  const made = await create(server);
  t.after(() => made.drop());
  return made;
}

// ---- a bucket per test ----------------------------------------------------------------------------------

/**
 * Options for `new S3Client(...)` against the server. Checksums only where S3 requires them: RGW 16 answers
 * a streamed PutObject that carries the SDK's default CRC32 trailer with 411 MissingContentLength.
 * Path-style, so bucket names never become host names.
 */
export function s3ClientConfig(server: ObjectStoreServer): S3ClientConfig {
  return {
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  };
}

/** Variables that give a child process (the AWS SDK's default chain, the aws CLI) the server's credentials. */
export function awsEnv(server: ObjectStoreServer): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: server.accessKeyId,
    AWS_SECRET_ACCESS_KEY: server.secretAccessKey,
    AWS_REGION: server.region,
    AWS_DEFAULT_REGION: server.region,
    AWS_REQUEST_CHECKSUM_CALCULATION: "WHEN_REQUIRED",
    AWS_RESPONSE_CHECKSUM_VALIDATION: "WHEN_REQUIRED",
  };
}

export interface TestBucket {
  name: string;
  server: ObjectStoreServer;
  /** `s3://NAME?endpoint=URL&region=REGION`, the bucket as one URL. */
  url: string;
  /** Deletes every object, version and unfinished multipart upload, then the bucket. */
  drop(): Promise<void>;
}

async function s3Client(server: ObjectStoreServer): Promise<{ client: S3Client; s3: typeof import("@aws-sdk/client-s3") }> {
  const s3 = await import("@aws-sdk/client-s3");
  return { client: new s3.S3Client(s3ClientConfig(server)), s3 };
}

async function emptyAndDeleteBucket(server: ObjectStoreServer, bucket: string) {
  const { client, s3 } = await s3Client(server);
  try {
    for (;;) {
      const uploads = await client.send(new s3.ListMultipartUploadsCommand({ Bucket: bucket }));
      for (const u of uploads.Uploads ?? []) await client.send(new s3.AbortMultipartUploadCommand({ Bucket: bucket, Key: u.Key, UploadId: u.UploadId }));
      if (!uploads.IsTruncated) break;
    }
    for (;;) {
      const page = await client.send(new s3.ListObjectVersionsCommand({ Bucket: bucket }));
      const objects = [...(page.Versions ?? []), ...(page.DeleteMarkers ?? [])].map((v) => ({ Key: v.Key, VersionId: v.VersionId }));
      if (objects.length > 0) await client.send(new s3.DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } }));
      if (!page.IsTruncated) break;
    }
    await client.send(new s3.DeleteBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
}

/** Creates `edge-test-<random>` on the server. */
export async function createBucket(server: ObjectStoreServer): Promise<TestBucket> {
  const name = `edge-test-${randomBytes(8).toString("hex")}`;
  const { client, s3 } = await s3Client(server);
  try {
    await client.send(new s3.CreateBucketCommand({ Bucket: name }));
  } finally {
    client.destroy();
  }
  const url = `s3://${name}?endpoint=${encodeURIComponent(server.endpoint)}&region=${server.region}`;
  return { name, server, url, drop: () => emptyAndDeleteBucket(server, name) };
}

/**
 * A fresh bucket on this process's object store, emptied and deleted after the test; undefined when the test
 * was skipped because no object store is available: `const bucket = await testBucket(t); if (!bucket) return;`
 */
export function testBucket(t: TestContext): Promise<TestBucket | undefined> {
  return createForTest(t, sharedObjectStore(), createBucket);
}

// ---- servers of a test's own (for tests that stop them) -------------------------------------------------

/** A PostgreSQL server for this test alone (to stop and start it), disposed after it; undefined when skipped. */
export async function privatePostgres(t: TestContext): Promise<PostgresInstance | undefined> {
  if (skippedForMissing(t, postgresMissing())) return undefined;
  const instance = await startPostgres();
  t.after(() => instance.dispose());
  return instance;
}

/** An object store for this test alone (to stop and start its gateway), disposed after it; undefined when skipped. */
export async function privateObjectStore(t: TestContext): Promise<ObjectStoreInstance | undefined> {
  if (skippedForMissing(t, objectStoreMissing())) return undefined;
  const instance = await startObjectStore();
  t.after(() => instance.dispose());
  return instance;
}

// ---- for scripts/run-tests.mjs: one of each for a whole test run ----------------------------------------

/**
 * Starts PostgreSQL and the object store (those the environment does not already name), side by side, and
 * returns the variables for the test processes: each server's address, or why it is unavailable.
 * `stop()` tears down what was started.
 */
export async function startServicesForRun(log: (line: string) => void): Promise<{ env: Record<string, string>; stop(): void }> {
  const env: Record<string, string> = {};
  const started: { dispose(): void }[] = [];
  const bringUp = async <T extends { dispose(): void }>(what: string, unavailableVar: string, missing: () => string | undefined, start: () => Promise<T>) => {
    const since = Date.now();
    const service = await resolveService(undefined, undefined, missing, start, what);
    if (!service.available) {
      env[unavailableVar] = service.reason;
      log(`${what} unavailable, tests that need it skip: ${service.reason}`);
      return undefined;
    }
    started.push(service.server);
    log(`${what} started in ${((Date.now() - since) / 1000).toFixed(1)} s`);
    return service.server;
  };
  const [pg, s3] = await Promise.all([
    process.env.EDGE_TEST_DATABASE_URL ? undefined : bringUp("PostgreSQL 15", "EDGE_TEST_DATABASE_UNAVAILABLE", postgresMissing, startPostgres),
    objectStoreFromEnv(process.env) ? undefined : bringUp("Ceph RGW", "EDGE_TEST_S3_UNAVAILABLE", objectStoreMissing, startObjectStore),
  ]);
  if (pg) env.EDGE_TEST_DATABASE_URL = pg.url;
  if (s3) Object.assign(env, objectStoreEnvVars(s3));
  return {
    env,
    stop() {
      for (const server of started) server.dispose();
    },
  };
}
