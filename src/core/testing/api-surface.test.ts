import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { ApiRoute } from "../http/app.js";
import { commands } from "../../commands.js";
import { startPlatform, type RunningPlatform } from "../../platform.js";
import { resolvePlatformConfig } from "../server/cli/serve.js";
import { ENDPOINTS, routeOf, type AccountFixture } from "./api-surface.js";

/**
 * The surface list (api-surface.ts) against the routes the platform really registers: a v4 route added without a
 * line in the list would never meet the hostile-input suite or the fuzzer, so it fails here instead.
 */

let platform: RunningPlatform;
let stateDir: string;

before(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "edge-surface-"));
  const flags = { "state-dir": stateDir, port: 0, "dns-port": 0, "dns-workers": 0, "log-level": "error" };
  // The options of `edgecli serve` with every area's merged in (the DNS port is one of the areas').
  const serveOptions = commands.find((c) => c.path.join(" ") === "serve")!.options!;
  const config = await resolvePlatformConfig(flags, new Set(Object.keys(flags)), serveOptions, {}, stateDir);
  platform = await startPlatform(config);
});
after(async () => {
  await platform?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

/** Values no route has as a static segment, so each lands where a real id would. */
const fixture: AccountFixture = {
  id: "a".repeat(32),
  token: "t",
  namespace: "n".repeat(32),
  bucket: "bucket-1",
  zone: "z".repeat(32),
  zoneName: "fixture.example",
  record: "r".repeat(32),
  gateway: "gateway-1",
  secondaryZone: "s".repeat(32),
  tsig: "k".repeat(32),
  peer: "p".repeat(32),
  spareToken: "o".repeat(32),
  queue: "q".repeat(32),
  consumer: "c".repeat(32),
  database: "d".repeat(32),
  script: "script-1",
};

const apiRoutes = (): ApiRoute[] => platform.app.apiRoutes.filter((r) => r.method !== "HEAD");

test("every v4 route the platform registers is in the surface list, and every listed API endpoint is a route", () => {
  const routes = apiRoutes();
  assert.ok(routes.length > 100, `only ${routes.length} routes seen: is the collector in core/http/app.ts wired?`);
  const covered = new Set<ApiRoute>();
  const stale: string[] = [];
  for (const e of ENDPOINTS.filter((x) => x.base === "api")) {
    const route = routeOf(routes, e.method, e.path(fixture));
    if (route) covered.add(route);
    else stale.push(`${e.method} ${e.path(fixture)}`);
  }
  const missing = routes.filter((r) => !covered.has(r)).map((r) => `${r.method} ${r.url}`);
  assert.deepEqual(missing, [], "routes the surface list (src/core/testing/api-surface.ts) lacks: add an endpoint for each");
  assert.deepEqual(stale, [], "listed endpoints no route answers");
});

test("a route is matched the way the router picks it: static segments before parameters, parameters before wildcards", () => {
  const routes: ApiRoute[] = [
    { method: "GET", url: "/zones/:zone_id/dns_records/:id" },
    { method: "GET", url: "/zones/:zone_id/dns_records/export" },
    { method: "GET", url: "/accounts/:account_id/r2/buckets/:bucket/objects/*" },
    { method: "GET", url: "/accounts/:account_id/r2/buckets/:bucket/objects" },
  ];
  assert.equal(routeOf(routes, "GET", "/zones/z/dns_records/export"), routes[1]);
  assert.equal(routeOf(routes, "GET", "/zones/z/dns_records/r1"), routes[0]);
  assert.equal(routeOf(routes, "GET", "/accounts/a/r2/buckets/b/objects/x/y"), routes[2]);
  assert.equal(routeOf(routes, "GET", "/accounts/a/r2/buckets/b/objects"), routes[3]);
  assert.equal(routeOf(routes, "PUT", "/zones/z/dns_records/r1"), undefined, "another method");
  assert.equal(routeOf(routes, "GET", "/zones/z/dns_records"), undefined, "a parameter matches one segment, not none");
});
