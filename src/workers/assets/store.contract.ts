import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import { collectAssetBodies } from "./collect.js";
import type { AssetsStore, ScriptAssets } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const H1 = "1".repeat(32);
const H2 = "2".repeat(32);
const H3 = "3".repeat(32);
const H4 = "4".repeat(32);
const CONFIG = { html_handling: "auto-trailing-slash", not_found_handling: "none", run_worker_first: false } as const;

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

  it("the manifests of an account's live sessions add up to their JSON's length; expired ones and other accounts' are not counted", async (store) => {
    const manifest = { "/a.txt": { hash: H1, size: 1 }, "/é.txt": { hash: H2, size: 2 } };
    assert.equal(await store.liveManifestChars(A), 0);
    await store.createSession("one", { accountId: A, script: "s", manifest, expiresAt: Date.now() + 60_000 });
    await store.createSession("two", { accountId: A, script: "t", manifest, expiresAt: Date.now() + 60_000 });
    await store.createSession("lapsed", { accountId: A, script: "s", manifest, expiresAt: Date.now() - 1 });
    await store.createSession("theirs", { accountId: B, script: "s", manifest, expiresAt: Date.now() + 60_000 });
    assert.equal(await store.liveManifestChars(A), 2 * JSON.stringify(manifest).length);
    assert.equal(await store.liveManifestChars(B), JSON.stringify(manifest).length);
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

  it("bodies no Worker and no live upload session names are marked, then removed a grace time later unless used again", async (store) => {
    for (const h of [H1, H2, H3, H4]) await store.putBody(A, h, null, Buffer.from(`body ${h}`));
    await store.putBody(B, H1, null, Buffer.from("B's copy"));
    await store.setScriptAssets(A, "site", { manifest: { "/index.html": { hash: H1, size: 1 } }, config: CONFIG });
    await store.createSession("pending", { accountId: A, script: "site", manifest: { "/next.html": { hash: H2, size: 1 } }, expiresAt: Date.now() + 60_000 });
    await store.createSession("lapsed", { accountId: A, script: "site", manifest: { "/old.html": { hash: H3, size: 1 } }, expiresAt: Date.now() - 1 });
    const hour = 3_600_000;
    const t0 = Date.now();
    // H3 (its session expired), H4 (never named) and B's H1 (A's Worker names A's body only) are found unused.
    assert.deepEqual(await collectAssetBodies(store, t0, hour), { marked: 3, removed: 0 });
    assert.deepEqual(await collectAssetBodies(store, t0 + hour - 1, hour), { marked: 0, removed: 0 }, "nothing goes before the grace time");
    // H4 is named again (a new deploy) before the grace time ends: it stays.
    await store.setScriptAssets(A, "other", { manifest: { "/again.html": { hash: H4, size: 1 } }, config: CONFIG });
    assert.deepEqual(await collectAssetBodies(store, t0 + hour, hour), { marked: 0, removed: 2 });
    assert.deepEqual([...(await store.bodies(A, [H1, H2, H3, H4])).keys()].sort(), [H1, H2, H4]);
    assert.equal((await store.bodies(B, [H1])).size, 0);
    // Unused again later: the clock starts over from that collection.
    await store.setScriptAssets(A, "other", undefined);
    const content = (await store.bodies(A, [H4])).get(H4)!.contentId;
    assert.deepEqual(await collectAssetBodies(store, t0 + 2 * hour, hour), { marked: 1, removed: 0 });
    assert.deepEqual(await collectAssetBodies(store, t0 + 3 * hour, hour), { marked: 0, removed: 1 });
    assert.equal((await store.bodies(A, [H4])).size, 0);
    await assert.rejects(read(store, content), "the content went with the row");
  });

  it("a removal checks that the body is still the one found unused", async (store) => {
    await store.putBody(A, H1, null, Buffer.from("x"));
    assert.equal(await store.removeBody(A, H1, 1), false, "never found unused");
    await store.markOrphaned([{ accountId: A, hash: H1 }], 5);
    assert.equal(await store.removeBody(A, H1, 4), false, "found unused at another time");
    assert.deepEqual(await store.bodyStates(), [{ accountId: A, hash: H1, orphanedAt: 5 }]);
    assert.equal(await store.removeBody(A, H1, 5), true);
    assert.deepEqual(await store.bodyStates(), []);
  });
});
