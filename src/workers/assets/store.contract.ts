import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { AssetsStore, ScriptAssets } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const H1 = "1".repeat(32);
const H2 = "2".repeat(32);

const read = async (store: AssetsStore, id: string) => {
  const chunks: Buffer[] = [];
  for await (const c of store.readBody(id)) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString();
};

export const describeAssetsStore = storeContract<AssetsStore>("AssetsStore", (it) => {
  it("a session is found by its token hash until it expires", async (store) => {
    const manifest = { "/a.txt": { hash: H1, size: 1 } };
    await store.createSession("live", { accountId: A, script: "s", manifest, expiresAt: Date.now() + 60_000 });
    await store.createSession("gone", { accountId: A, script: "s", manifest, expiresAt: Date.now() - 1 });
    assert.deepEqual((await store.session("live"))?.manifest, manifest);
    assert.equal((await store.session("live"))?.accountId, A);
    assert.equal(await store.session("gone"), undefined);
    assert.equal(await store.session("never"), undefined);
  });

  it("bodies belong to one account; a second put of a hash keeps the first", async (store) => {
    await store.putBody(A, H1, "text/plain; charset=utf-8", Buffer.from("first"));
    await store.putBody(A, H1, "text/plain; charset=utf-8", Buffer.from("again"));
    const mine = await store.bodies(A, [H1, H2, H1]);
    assert.deepEqual([...mine.keys()], [H1]);
    assert.equal(mine.get(H1)?.size, 5);
    assert.equal(mine.get(H1)?.contentType, "text/plain; charset=utf-8");
    assert.equal(await read(store, mine.get(H1)!.contentId), "first");
    assert.equal((await store.bodies(B, [H1])).size, 0, "another account does not have it");
    await store.putBody(B, H2, null, Buffer.from("x"));
    assert.equal((await store.bodies(B, [H2])).get(H2)?.contentType, null);
  });

  it("a Worker's assets are replaced and removed, per account", async (store) => {
    const assets: ScriptAssets = {
      manifest: { "/index.html": { hash: H1, size: 3 } },
      config: { html_handling: "auto-trailing-slash", not_found_handling: "none", run_worker_first: false },
    };
    await store.setScriptAssets(A, "s", assets);
    assert.deepEqual(await store.scriptAssets(A, "s"), assets);
    assert.equal(await store.scriptAssets(B, "s"), undefined);
    const next = { ...assets, config: { ...assets.config, not_found_handling: "404-page" as const } };
    await store.setScriptAssets(A, "s", next);
    assert.deepEqual(await store.scriptAssets(A, "s"), next);
    await store.setScriptAssets(A, "s", undefined);
    assert.equal(await store.scriptAssets(A, "s"), undefined);
  });
});
