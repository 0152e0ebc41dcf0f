import { test } from "node:test";
import assert from "node:assert/strict";
import Fastify, { type FastifyRequest } from "fastify";
import { Principal } from "../auth/principal.js";
import { EdgeError } from "../errors.js";
import { toEnvelope } from "../errors/render.js";
import { assertRouteDeclaresPermission, guardRoute } from "./guard.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const C = "c".repeat(32);

/** A caller who reads KV on A and edits DNS on B; C exists for nobody here. */
const caller = new Principal("api_token", "u", "u@example.com", new Set([A, B]), [
  { account_id: A, permissions: ["kv_read"] },
  { account_id: B, permissions: ["dns_edit"] },
]);

async function guardedApp() {
  const app = Fastify();
  app.decorateRequest("principal", undefined as unknown as Principal);
  app.addHook("onRequest", async (req) => {
    req.principal = caller;
  });
  app.addHook("preHandler", guardRoute);
  app.setErrorHandler((err, _req, reply) => {
    const e = err instanceof EdgeError ? err : new EdgeError(500, 0, String(err));
    return reply.status(e.status).send(toEnvelope(e));
  });
  const zones = new Map([["z-on-b", B]]);
  const zoneAccount = (req: FastifyRequest) => {
    const account = zones.get((req.params as { zone_id: string }).zone_id);
    if (!account) throw new EdgeError(404, 1001, "zone not found");
    return account;
  };
  const done = async () => ({ done: true });
  app.get("/accounts/:account_id/kv", { config: { permission: "kv_read" } }, done);
  app.put("/accounts/:account_id/kv", { config: { permission: "kv_edit" } }, done);
  app.get("/accounts/:account_id", { config: { permission: "any" } }, done);
  app.get("/zones/:zone_id/dns", { config: { permission: "dns_read", account: zoneAccount } }, done);
  app.get("/user/dns", { config: { permission: "dns_edit", account: "anywhere" } }, done);
  app.get("/user/kv", { config: { permission: "kv_edit", account: "anywhere" } }, done);
  app.get("/no-account", { config: { permission: "kv_read" } }, done);
  app.get("/open", { config: { permission: "self" } }, done);
  await app.ready();
  return app;
}

test("the guard: a route's permission on its account, refused 403/10000 alike for unknown and invisible accounts", async () => {
  const app = await guardedApp();
  const call = async (method: "GET" | "PUT", url: string) => {
    const r = await app.inject({ method, url });
    return { status: r.statusCode, body: r.json() as { errors: { code: number; message: string }[] } };
  };
  assert.equal((await call("GET", `/accounts/${A}/kv`)).status, 200);
  const denied = await call("PUT", `/accounts/${A}/kv`);
  assert.equal(denied.status, 403);
  assert.deepEqual(denied.body.errors, [{ code: 10000, message: "Authentication error" }]);
  assert.deepEqual(await call("GET", `/accounts/${B}/kv`), denied, "an account seen without the permission");
  assert.deepEqual(await call("GET", `/accounts/${C}/kv`), denied, "an account not seen at all");
  assert.deepEqual(await call("GET", `/accounts/nonsense/kv`), denied, "not even an account id");

  assert.equal((await call("GET", `/accounts/${B}`)).status, 200, '"any": some permission on the account');
  assert.deepEqual(await call("GET", `/accounts/${C}`), denied);

  assert.equal((await call("GET", "/zones/z-on-b/dns")).status, 200, "a resolver names the account (dns_edit implies dns_read)");
  assert.equal((await call("GET", "/zones/unknown/dns")).status, 404, "a resolver's own refusal comes through");

  assert.equal((await call("GET", "/user/dns")).status, 200, '"anywhere": held on some account');
  assert.deepEqual(await call("GET", "/user/kv"), denied);

  assert.deepEqual(await call("GET", "/no-account"), denied, "a guarded route without an account is refused, not opened");
  assert.equal((await call("GET", "/open")).status, 200, '"self": authentication alone, the handler filters by the caller');
  await app.close();
});

test("a v4 route that declares no permission is refused when it is registered, not opened to every caller", async () => {
  const app = Fastify();
  app.addHook("onRoute", assertRouteDeclaresPermission);
  app.get("/declared", { config: { permission: "self" } }, async () => ({}));
  assert.throws(() => app.get("/forgotten", async () => ({})), /route GET \/forgotten declares no config.permission/);
  await app.close();
});
