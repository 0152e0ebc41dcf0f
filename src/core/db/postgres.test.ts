import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { UserError } from "../errors.js";
import { dependencyRefusal } from "../errors/dependency.js";
import { testDatabase } from "../testing/services.js";
import { migrateArea } from "./pg-migrations.js";
import { describeDatabaseUrl, Postgres } from "./postgres.js";

async function pool(t: import("node:test").TestContext, poolSize = 4): Promise<Postgres | undefined> {
  const db = await testDatabase(t);
  if (!db) return undefined;
  const pg = new Postgres({ url: db.url, poolSize });
  t.after(() => pg.close());
  return pg;
}

test("withTransaction commits what resolves and rolls back what throws", async (t) => {
  const pg = await pool(t);
  if (!pg) return;
  await pg.execute("CREATE TABLE items (name TEXT PRIMARY KEY)");
  await pg.withTransaction(async (tx) => {
    await tx.execute("INSERT INTO items VALUES ($1)", ["kept"]);
  });
  await assert.rejects(
    pg.withTransaction(async (tx) => {
      await tx.execute("INSERT INTO items VALUES ($1)", ["lost"]);
      throw new Error("changed my mind");
    }),
    /changed my mind/,
  );
  assert.deepEqual(await pg.rows("SELECT name FROM items ORDER BY name"), [{ name: "kept" }]);
});

test("a serialization failure runs the transaction again, so two conflicting increments both count", async (t) => {
  const pg = await pool(t);
  if (!pg) return;
  await pg.execute("CREATE TABLE counter (n INT NOT NULL); INSERT INTO counter VALUES (0)");
  // Both transactions read before either writes (on their first attempt): one of them must fail with 40001.
  let reads = 0;
  let bothRead!: () => void;
  const barrier = new Promise<void>((resolve) => (bothRead = resolve));
  let attempts = 0;
  const increment = () =>
    pg.withTransaction(
      async (tx) => {
        attempts++;
        const { n } = (await tx.row<{ n: number }>("SELECT n FROM counter"))!;
        if (++reads === 2) bothRead();
        if (reads <= 2) await barrier;
        await tx.execute("UPDATE counter SET n = $1", [n + 1]);
      },
      { isolation: "serializable" },
    );
  await Promise.all([increment(), increment()]);
  assert.equal((await pg.row<{ n: number }>("SELECT n FROM counter"))!.n, 2);
  assert.ok(attempts >= 3, `one transaction was retried (attempts: ${attempts})`);
});

test("migrations run once per area whichever node starts first, in the area's schema, and a newer schema is refused", async (t) => {
  const db = await testDatabase(t);
  if (!db) return;
  const nodes = [new Postgres({ url: db.url, poolSize: 2 }), new Postgres({ url: db.url, poolSize: 2 }), new Postgres({ url: db.url, poolSize: 2 })];
  t.after(() => Promise.all(nodes.map((n) => n.close())));
  const migrations = [
    // Not idempotent: a second run would fail.
    "CREATE TABLE entries (key TEXT PRIMARY KEY); CREATE TABLE notes (id INT)",
    async (tx: import("./postgres.js").Transaction) => void (await tx.execute("INSERT INTO notes VALUES (1)")),
  ];
  const applied = await Promise.all(nodes.map((n) => migrateArea(n, "kv", migrations)));
  assert.deepEqual(
    applied.sort((a, b) => b - a),
    [2, 0, 0],
  );
  const pg = nodes[0];
  assert.deepEqual(await pg.rows("SELECT count(*)::int AS n FROM kv.notes"), [{ n: 1 }]);
  assert.deepEqual(await pg.rows("SELECT area, version FROM public.schema_migrations ORDER BY version"), [
    { area: "kv", version: 1 },
    { area: "kv", version: 2 },
  ]);
  // Another area may use the same table names.
  assert.equal(await migrateArea(pg, "dns", ["CREATE TABLE entries (id INT)"]), 1);
  assert.equal(await migrateArea(pg, "kv", migrations), 0);

  // An older edgecli (knowing one migration) refuses the database a newer one migrated.
  await assert.rejects(migrateArea(pg, "kv", migrations.slice(0, 1)), (err: unknown) => {
    assert.ok(err instanceof UserError);
    assert.match(err.message, /"kv" is at version 2, newer than this edgecli knows \(1\).*Upgrade edgecli/);
    return true;
  });
});

test("a failing migration leaves the schema as it was", async (t) => {
  const pg = await pool(t);
  if (!pg) return;
  await assert.rejects(migrateArea(pg, "r2", ["CREATE TABLE objects (id INT)", "CREATE TABLE broken (id NOSUCHTYPE)"]), /nosuchtype/);
  assert.deepEqual(await pg.rows("SELECT 1 FROM information_schema.schemata WHERE schema_name = 'r2'"), []);
  assert.deepEqual(await pg.rows("SELECT to_regclass('public.schema_migrations') AS t"), [{ t: null }]);
  assert.equal(await migrateArea(pg, "r2", ["CREATE TABLE objects (id INT)"]), 1);
});

test("PostgreSQL that does not answer is a 503 naming it, fast; a bad statement is not", async (t) => {
  // A port where nothing listens: connections are refused at once.
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as import("node:net").AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const away = new Postgres({ url: `postgres://edge:secret@127.0.0.1:${port}/edge`, poolSize: 1 });
  t.after(() => away.close());
  for (const attempt of [() => away.rows("SELECT 1"), () => away.withTransaction(async () => 1), () => away.ping()]) {
    const err = await attempt().then(
      () => assert.fail("expected a failure"),
      (e: unknown) => e,
    );
    const refusal = dependencyRefusal(err);
    assert.equal(refusal?.status, 503);
    assert.match(refusal!.message, /^PostgreSQL is unreachable/);
  }
  assert.equal(away.location, `postgres://edge@127.0.0.1:${port}/edge`);
  assert.equal(describeDatabaseUrl("postgres://u:p%40ss@h:1/d"), "postgres://u@h:1/d");

  const pg = await pool(t);
  if (!pg) return;
  const syntax = await pg.rows("SELEKT 1").catch((e: unknown) => e);
  assert.equal(dependencyRefusal(syntax), undefined, "a bug of ours stays a 500");
});

test("a server that shuts a connection down (57P01) is a 503, and the pool reconnects by itself", async (t) => {
  const db = await testDatabase(t);
  if (!db) return;
  let idleLost!: () => void;
  const lost = new Promise<void>((resolve) => (idleLost = resolve));
  const pg = new Postgres({ url: db.url, poolSize: 1, onIdleError: () => idleLost() });
  const admin = new Postgres({ url: db.url, poolSize: 1 });
  t.after(() => Promise.all([pg.close(), admin.close()]));
  const pid = (await pg.row<{ pid: number }>("SELECT pg_backend_pid() AS pid"))!.pid;
  // Another connection terminates ours, as a server restart would: while idle in the pool...
  await admin.execute("SELECT pg_terminate_backend($1)", [pid]);
  await lost;
  assert.deepEqual(await pg.rows("SELECT 1 AS one"), [{ one: 1 }], "the pool replaced the connection it lost");
  // ...and while a transaction holds it, between two statements: 57P01 reaches the caller as a 503.
  const err = await pg
    .withTransaction(async (tx) => {
      const me = (await tx.row<{ pid: number }>("SELECT pg_backend_pid() AS pid"))!.pid;
      await admin.execute("SELECT pg_terminate_backend($1)", [me]);
      await tx.execute("SELECT 1");
    })
    .catch((e: unknown) => e);
  assert.equal(dependencyRefusal(err)?.status, 503, String(err));
  assert.deepEqual(await pg.rows("SELECT 1 AS one"), [{ one: 1 }], "a new connection serves the next statement");
});
