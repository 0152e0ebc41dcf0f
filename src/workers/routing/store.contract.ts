import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { CustomDomain, RoutesStore, WorkerRoute } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const route = (id: string, pattern: string, script: string | null, zoneId = "z1", accountId = A): WorkerRoute => ({ id, zoneId, accountId, pattern, script });
const domain = (id: string, hostname: string, service: string, accountId = A, zoneId = "z1"): CustomDomain => ({
  id,
  accountId,
  zoneId,
  zoneName: "example.com",
  hostname,
  service,
  environment: "production",
});
const patterns = (routes: WorkerRoute[]) => routes.map((r) => r.pattern);

export const describeRoutesStore = storeContract<RoutesStore>("RoutesStore", (it) => {
  it("routes are kept per zone, oldest first, and found by zone, by script and all together", async (store) => {
    await store.addRoute(route("r1", "example.com/*", "one"));
    await store.addRoute(route("r2", "a.example.com/*", "two"));
    await store.addRoute(route("r3", "other.net/*", "one", "z2", B));
    await store.addRoute(route("r4", "example.com/static/*", null));
    assert.deepEqual(await store.zoneRoutes("z1"), [
      route("r1", "example.com/*", "one"),
      route("r2", "a.example.com/*", "two"),
      route("r4", "example.com/static/*", null),
    ]);
    assert.deepEqual(patterns(await store.scriptRoutes(A, "one")), ["example.com/*"]);
    assert.deepEqual(patterns(await store.scriptRoutes(B, "one")), ["other.net/*"]);
    assert.equal((await store.allRoutes()).length, 4);
  });

  it("a pattern is unique in its zone: a second route with it, or a change to it, is refused and nothing changes", async (store) => {
    await store.addRoute(route("r1", "example.com/*", "one"));
    await store.addRoute(route("r2", "example.com/api/*", "two"));
    await assert.rejects(
      store.addRoute(route("r3", "example.com/*", "two")),
      (err: { status?: number; errors?: { code: number }[] }) => err.status === 409 && err.errors?.[0]?.code === 10020,
    );
    await assert.rejects(store.updateRoute(route("r2", "example.com/*", "two")), { status: 409 } as object);
    assert.deepEqual(patterns(await store.zoneRoutes("z1")), ["example.com/*", "example.com/api/*"]);
    // Another zone may hold the same text (its zone is another one).
    await store.addRoute(route("r4", "example.com/*", "two", "z2"));
    assert.equal(await store.updateRoute(route("r2", "example.com/v2/*", null)), true);
    assert.equal(await store.updateRoute(route("r9", "example.com/v3/*", null)), false);
    assert.equal(await store.updateRoute(route("r2", "example.com/v4/*", null, "z2")), false, "a route is changed through its own zone only");
    assert.deepEqual(await store.zoneRoutes("z1"), [route("r1", "example.com/*", "one"), route("r2", "example.com/v2/*", null)]);
  });

  it("replacing a script's routes is all or nothing, and leaves other scripts' and accounts' routes alone", async (store) => {
    await store.addRoute(route("r1", "example.com/*", "one"));
    await store.addRoute(route("r2", "example.com/old/*", "one"));
    await store.addRoute(route("r3", "example.com/two/*", "two"));
    await store.addRoute(route("r4", "b.net/*", "one", "z2", B));
    await store.replaceScriptRoutes(A, "one", [route("n1", "example.com/new/*", "one"), route("n2", "example.com/old/*", "one")]);
    assert.deepEqual(patterns(await store.scriptRoutes(A, "one")), ["example.com/new/*", "example.com/old/*"]);
    await assert.rejects(store.replaceScriptRoutes(A, "one", [route("n3", "example.com/x/*", "one"), route("n4", "example.com/two/*", "one")]), {
      status: 409,
    } as object);
    assert.deepEqual(patterns(await store.scriptRoutes(A, "one")), ["example.com/new/*", "example.com/old/*"]);
    assert.deepEqual(patterns(await store.scriptRoutes(B, "one")), ["b.net/*"]);
    await store.replaceScriptRoutes(A, "one", []);
    assert.deepEqual(await store.scriptRoutes(A, "one"), []);
    assert.deepEqual(patterns(await store.zoneRoutes("z1")), ["example.com/two/*"]);
  });

  it("a hostname is one Custom Domain: moved to another Worker of its account only when told, never to another account", async (store) => {
    const first = await store.putDomain(domain("d1", "app.example.com", "one"), false);
    assert.equal(first.id, "d1");
    assert.deepEqual(
      await store.putDomain(domain("d2", "app.example.com", "one"), false),
      domain("d1", "app.example.com", "one"),
      "the same again keeps the id",
    );
    await assert.rejects(store.putDomain(domain("d3", "app.example.com", "two"), false), { status: 409 } as object);
    assert.equal((await store.domainByHostname("app.example.com"))?.service, "one");
    assert.deepEqual(await store.putDomain(domain("d4", "app.example.com", "two"), true), domain("d1", "app.example.com", "two"));
    await assert.rejects(store.putDomain(domain("d5", "app.example.com", "two", B), true), { status: 409 } as object);
    await store.putDomain(domain("d6", "api.example.com", "one"), false);
    await store.putDomain(domain("d7", "x.other.net", "three", B, "z2"), false);
    assert.deepEqual(
      (await store.domains(A)).map((d) => [d.hostname, d.service]),
      [
        ["api.example.com", "one"],
        ["app.example.com", "two"],
      ],
    );
    assert.equal((await store.allDomains()).length, 3);
    assert.equal(await store.deleteDomain(B, "d1"), false, "another account's domain is not deleted");
    assert.equal(await store.deleteDomain(A, "d1"), true);
    assert.equal(await store.domainByHostname("app.example.com"), undefined);
  });

  it("deleting a zone removes its routes and domains; deleting a script removes that account's routes and domains naming it", async (store) => {
    await store.addRoute(route("r1", "example.com/*", "one"));
    await store.addRoute(route("r2", "other.net/*", "one", "z2"));
    await store.addRoute(route("r3", "b.net/*", "one", "z3", B));
    await store.putDomain(domain("d1", "app.example.com", "one"), false);
    await store.putDomain(domain("d2", "app.other.net", "two", A, "z2"), false);
    await store.deleteZone("z1");
    assert.deepEqual(await store.zoneRoutes("z1"), []);
    assert.deepEqual(
      (await store.allDomains()).map((d) => d.hostname),
      ["app.other.net"],
    );
    await store.deleteScript(A, "one");
    assert.deepEqual(patterns(await store.allRoutes()), ["b.net/*"]);
    await store.deleteScript(A, "two");
    assert.deepEqual(await store.allDomains(), []);
  });

  it("a Worker's workers-domain URL is on until turned off, per account, and on again when it is deleted", async (store) => {
    assert.deepEqual(await store.workersDevOff(), []);
    await store.setWorkersDev(A, "one", false);
    await store.setWorkersDev(A, "one", false);
    await store.setWorkersDev(B, "two", false);
    assert.deepEqual(await store.workersDevOff(), [
      { accountId: A, script: "one" },
      { accountId: B, script: "two" },
    ]);
    await store.setWorkersDev(B, "two", true);
    await store.deleteScript(A, "one");
    assert.deepEqual(await store.workersDevOff(), []);
  });
});
