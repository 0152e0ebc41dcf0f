import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform, uploadScript } from "../testing/helpers.js";
import { withTempDir } from "../../core/testing/temp-dir.js";

/**
 * Service bindings end to end: the real platform, `edgecli deploy` with `[[services]]`, two workerd processes, fetch
 * and RPC calls crossing between them through the binding server, and two accounts.
 */

let p: TestPlatform;
let other: string;
before(async () => {
  p = await startPlatform();
  other = await createAccount(p, "other");
});
after(async () => {
  await p?.dispose();
});

/** The bound Worker: a WorkerEntrypoint class with fetch and RPC methods; `version` tells the deploys apart. */
const calc = (version: string) => `import { WorkerEntrypoint } from "cloudflare:workers";
export default class extends WorkerEntrypoint {
  async fetch(req) {
    return new Response("calc ${version} " + req.method + " " + new URL(req.url).pathname + " " + (req.headers.get("x-edge-binding") ?? "no binding header") + " " + await req.text());
  }
  add(a, b) { return a + b + ${version === "v2" ? 100 : 0}; }
  async describe(x) { return { version: "${version}", twice: [x, x], when: new Date(0) }; }
}
`;

const FRONT = `export default {
  async fetch(req, env) {
    const out = {};
    try {
      out.fetched = await (await env.CALC.fetch("http://calc/sum", { method: "POST", body: "payload" })).text();
    } catch (e) { out.fetched = "threw " + e.message; }
    try { out.sum = await env.CALC.add(1, 2); } catch (e) { out.sum = "threw " + e.message; }
    try { out.described = await env.CALC.describe("x"); } catch (e) { out.described = "threw " + e.message; }
    return Response.json(out);
  },
};
`;

async function front(): Promise<{ fetched: string; sum: number | string; described: any }> {
  const r = await hit(p, "front", "/");
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.text);
}

test("a service binding reaches the bound Worker's fetch and RPC methods, follows its redeploys, and only within the account", async () => {
  const up = await uploadScript(p, "calc", calc("v1"));
  assert.equal(up.status, 200, JSON.stringify(up.body));

  await withTempDir("svc-front-", async (dir) => {
    writeFileSync(
      join(dir, "wrangler.toml"),
      `name = "front"\nmain = "index.js"\ncompatibility_date = "2024-09-01"\n\n[[services]]\nbinding = "CALC"\nservice = "calc"\n`,
    );
    writeFileSync(join(dir, "index.js"), FRONT);
    const r = await p.cli(["deploy"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /- Services:\n\s+- CALC: calc/);
  });
  const listed = await p.api("GET", `/accounts/${p.accountId}/workers/scripts/front/settings`);
  assert.equal(listed.status, 200);

  const v1 = await front();
  assert.equal(v1.fetched, "calc v1 POST /sum no binding header payload", "the fetch reached the bound Worker, without the platform's binding header");
  assert.equal(v1.sum, 3);
  assert.deepEqual(v1.described, { version: "v1", twice: ["x", "x"], when: "1970-01-01T00:00:00.000Z" });

  // A new version of the bound Worker is what later calls reach, for fetch and for RPC alike.
  assert.equal((await uploadScript(p, "calc", calc("v2"))).status, 200);
  const v2 = await front();
  assert.match(v2.fetched, /^calc v2 /);
  assert.equal(v2.sum, 103);
  assert.equal(v2.described.version, "v2");

  // Deleted: calls fail with a clear error; the same name taken by another account is never reached.
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/calc`)).status, 200);
  const gone = await front();
  assert.match(gone.fetched, /^The Worker "calc" bound by this service binding is not deployed in this account/);
  assert.match(String(gone.sum), /^threw /);
  const taken = await uploadScript(p, "calc", calc("other-account"), {}, { accountId: other, headers: p.keyHeaders() });
  assert.equal(taken.status, 200, JSON.stringify(taken.body));
  const still = await front();
  assert.match(still.fetched, /not deployed in this account/);
  assert.match(String(still.sum), /^threw /);
  assert.equal((await p.api("DELETE", `/accounts/${other}/workers/scripts/calc`, undefined, p.keyHeaders())).status, 200);
});

test("an upload binding a Worker of another account, or one that does not exist, or a named entrypoint, is refused with a 400", async () => {
  assert.equal((await uploadScript(p, "mine", `export default { fetch() { return new Response("mine"); } };`)).status, 200);
  const bind = (service: string, extra: Record<string, string> = {}) => ({ bindings: [{ type: "service", name: "S", service, ...extra }] });

  const cross = await uploadScript(p, "intruder", FRONT, bind("mine"), { accountId: other, headers: p.keyHeaders() });
  assert.equal(cross.status, 400, JSON.stringify(cross.body));
  assert.match(cross.body.errors[0].message, /Binding S: service "mine" is not a Worker of this account/);

  const missing = await uploadScript(p, "dangling", FRONT, bind("nosuch"));
  assert.equal(missing.status, 400);
  assert.match(missing.body.errors[0].message, /service "nosuch" is not a Worker of this account/);

  const named = await uploadScript(p, "named", FRONT, bind("mine", { entrypoint: "Admin" }));
  assert.equal(named.status, 400);
  assert.match(named.body.errors[0].message, /entrypoint "Admin" is not supported/);

  for (const name of ["intruder", "dangling", "named"]) {
    assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/services/${name}`)).status, 404, `${name} was not created`);
  }
  assert.equal((await p.api("GET", `/accounts/${other}/workers/services/intruder`, undefined, p.keyHeaders())).status, 404);
});
