import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { hit, startPlatform, uploadScript, uploadVersion } from "../testing/helpers.js";

/**
 * Versions of a Worker with Durable Objects, on real workerd: a version upload is kept without being deployed (one
 * with migrations is refused), any one version that fits the Worker's namespaces can be deployed or rolled back to at
 * 100% (its class code then runs every object, on the same storage), and a split of two versions is refused.
 */

let p: TestPlatform;
before(async () => {
  p = await startPlatform();
});
after(() => p?.dispose());

const NAME = "objects-versions";
const scripts = () => `/accounts/${p.accountId}/workers/scripts`;
const bindings = [{ type: "durable_object_namespace", name: "COUNTER", class_name: "Counter" }];

/**
 * A version labelled `label`: its Counter counts calls in storage and answers its own label (the object's version) and
 * its id; its Worker says which version it is in `x-worker`. `/obj/<name>` is a fetch() to the object, `/rpc/<name>`
 * an RPC call, `/peer/<a>/<b>` object a calling object b (the env of an object routes too).
 */
const version = (label: string) => `import { DurableObject } from "cloudflare:workers";
export class Counter extends DurableObject {
  async count() {
    const n = ((await this.ctx.storage.get("n")) ?? 0) + 1;
    await this.ctx.storage.put("n", n);
    return n;
  }
  async fetch() {
    return Response.json({ label: ${JSON.stringify(label)}, n: await this.count(), id: this.ctx.id.toString() });
  }
  label() { return ${JSON.stringify(label)}; }
  async peer(name) { return this.env.COUNTER.get(this.env.COUNTER.idFromName(name)).label(); }
}
export default {
  async fetch(req, env) {
    const [, kind, a, b] = new URL(req.url).pathname.split("/");
    const stub = env.COUNTER.get(env.COUNTER.idFromName(a));
    const answer = kind === "obj" ? await stub.fetch(req) : Response.json({ label: kind === "rpc" ? await stub.label() : await stub.peer(b) });
    return new Response(answer.body, { headers: { "x-worker": ${JSON.stringify(label)} } });
  },
};`;

interface ObjectAnswer {
  label: string;
  n: number;
  id: string;
  worker: string;
}

async function call(path: string, headers?: Record<string, string>): Promise<ObjectAnswer> {
  const r = await hit(p, NAME, path, { headers });
  assert.equal(r.status, 200, r.text);
  return { ...(JSON.parse(r.text) as Omit<ObjectAnswer, "worker">), worker: r.headers["x-worker"] as string };
}

async function deploy(versions: [string, number][]): Promise<void> {
  const r = await p.api("POST", `${scripts()}/${NAME}/deployments`, {
    strategy: "percentage",
    versions: versions.map(([version_id, percentage]) => ({ version_id, percentage })),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

const NAMES = ["a", "b", "c"];

test("a Worker with Durable Objects: versions upload keeps a version, deploys and rollbacks switch the objects' code on the same storage, a split is refused", async () => {
  const a = await uploadScript(p, NAME, version("A"), { bindings, migrations: { new_tag: "v1", new_sqlite_classes: ["Counter"] } });
  assert.equal(a.status, 200, JSON.stringify(a.body));
  const idA: string = a.body.result.deployment_id;
  for (const name of NAMES) assert.deepEqual(await call(`/obj/${name}`).then((r) => [r.label, r.worker, r.n]), ["A", "A", 1]);

  // A version upload is kept without being deployed; one carrying migrations is refused, as hosted (10211).
  const migrating = await uploadVersion(p, NAME, version("B"), { bindings, migrations: { old_tag: "v1", new_tag: "v2", new_sqlite_classes: ["Other"] } });
  assert.equal(migrating.status, 400, JSON.stringify(migrating.body));
  assert.equal(migrating.body.errors[0].code, 10211);
  const b = await uploadVersion(p, NAME, version("B"), { bindings });
  assert.equal(b.status, 200, JSON.stringify(b.body));
  assert.ok(!b.body.messages.some((m: { code: number }) => m.code === 10201), "not deployed at once");
  const idB: string = b.body.result.id;
  assert.deepEqual(await call(`/obj/a`).then((r) => [r.label, r.n]), ["A", 2], "the upload changed nothing that runs");

  // Deploying B at 100%: B's class code runs every object, on the storage A left.
  await deploy([[idB, 100]]);
  for (const name of NAMES) {
    const fetched = await call(`/obj/${name}`);
    assert.deepEqual([fetched.label, fetched.worker], ["B", "B"], `object ${name} runs B's code`);
    assert.equal(fetched.n, name === "a" ? 3 : 2, `object ${name} kept its storage`);
    assert.equal((await call(`/rpc/${name}`)).label, "B", `object ${name} over RPC`);
  }
  assert.equal((await call(`/peer/a/b`)).label, "B", "an object calling another");

  // Two versions sharing the traffic: refused, saying why; nothing changes.
  const split = await p.api("POST", `${scripts()}/${NAME}/deployments`, {
    strategy: "percentage",
    versions: [
      { version_id: idA, percentage: 50 },
      { version_id: idB, percentage: 50 },
    ],
  });
  assert.equal(split.status, 400, JSON.stringify(split.body));
  assert.match(split.body.errors[0].message, /Durable Objects: here it runs one version at a time/);
  assert.equal((await call(`/obj/c`)).label, "B");

  // A rollback to A: A's code again, the storage B wrote.
  const back = await p.api("POST", `${scripts()}/${NAME}/deployments`, { strategy: "percentage", versions: [{ version_id: idA, percentage: 100 }] });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  for (const name of NAMES) {
    const r = await call(`/obj/${name}`);
    assert.deepEqual([r.label, r.worker, r.n], ["A", "A", name === "a" ? 4 : name === "b" ? 3 : 4]);
  }
  const deployments = await p.api("GET", `${scripts()}/${NAME}/deployments`);
  assert.deepEqual(deployments.body.result.deployments[0].versions, [{ version_id: idA, percentage: 100 }]);

  // A migration creates a class A does not export: A no longer fits, so deploying it is refused and C keeps running.
  const c = await uploadScript(p, NAME, `${version("C")}\nexport class Other extends DurableObject {}`, {
    bindings,
    migrations: { old_tag: "v1", new_tag: "v2", new_sqlite_classes: ["Other"] },
  });
  assert.equal(c.status, 200, JSON.stringify(c.body));
  assert.deepEqual(await call(`/obj/a`).then((r) => [r.label, r.n]), ["C", 5]);
  const stale = await p.api("POST", `${scripts()}/${NAME}/deployments`, { strategy: "percentage", versions: [{ version_id: idA, percentage: 100 }] });
  assert.equal(stale.status, 400, JSON.stringify(stale.body));
  assert.match(stale.body.errors[0].message, /does not export the Durable Object class Other/);
  assert.deepEqual(await call(`/obj/a`).then((r) => [r.label, r.n]), ["C", 6]);
});
test("a version of a Worker with Durable Objects that does not fit its namespaces is refused, nothing changes", async () => {
  const name = "objects-versions-misfit";
  const first = await uploadScript(p, name, version("A"), { bindings, migrations: { new_tag: "v1", new_sqlite_classes: ["Counter"] } });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  // A binding to a class that has no namespace.
  const unbound = await uploadVersion(p, name, version("B"), { bindings: [{ type: "durable_object_namespace", name: "COUNTER", class_name: "Nope" }] });
  assert.equal(unbound.status, 400, JSON.stringify(unbound.body));
  // A version that does not export Counter, whose objects exist: its check on workerd refuses it.
  const noClass = await uploadVersion(p, name, `export default { fetch() { return new Response("no class"); } };`);
  assert.equal(noClass.status, 400, JSON.stringify(noClass.body));
  assert.match(noClass.body.errors[0].message, /does not export the Durable Object class Counter/);
  const listed = await p.api("GET", `${scripts()}/${name}/versions`);
  assert.equal(listed.body.result_info.total_count, 1);
  const r = await hit(p, name, `/obj/x`);
  assert.equal(JSON.parse(r.text).label, "A");
});
