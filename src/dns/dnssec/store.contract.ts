import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { storeContract } from "../../core/testing/contract.js";
import { generateKey, newKeyId, type KeyRole } from "./keys.js";
import type { DnssecStore, KeyState, StoredKey, ZoneDnssec } from "./store.js";

const zoneId = () => randomBytes(16).toString("hex");

const key = (role: KeyRole, state: KeyState = "active", created = "2026-01-01T00:00:00.000Z"): StoredKey => ({
  id: newKeyId(),
  role,
  state,
  ...generateKey(role),
  created_on: created,
  state_since: created,
});

const signed = (zone = zoneId(), keys = [key("ksk"), key("zsk")]): ZoneDnssec => ({
  zone_id: zone,
  status: "active",
  enabled_on: "2026-01-01T00:00:00.000Z",
  modified_on: "2026-01-01T00:00:00.000Z",
  keys,
});

/** What every DnssecStore does (run by sqlite-store.test.ts). */
export const describeDnssecStore = storeContract<DnssecStore>("DnssecStore", (it) => {
  it("keeps a zone's state and keys as written, private keys included, and lists every zone", async (store) => {
    const a = signed();
    const b = { ...signed(), status: "disabled" as const, enabled_on: null };
    await store.put(a);
    await store.put(b);
    assert.deepEqual(await store.get(a.zone_id), a);
    assert.deepEqual(
      (await store.list()).sort((x, y) => x.zone_id.localeCompare(y.zone_id)),
      [a, b].sort((x, y) => x.zone_id.localeCompare(y.zone_id)),
    );
    assert.equal(await store.get(zoneId()), undefined);
  });

  it("replaces the whole key set on put: keys dropped from it are gone, states and order kept", async (store) => {
    const z = signed();
    await store.put(z);
    const [ksk, zsk] = z.keys;
    const next = key("zsk", "published", "2026-01-02T00:00:00.000Z");
    const rolled: ZoneDnssec = {
      ...z,
      modified_on: "2026-01-02T00:00:00.000Z",
      keys: [ksk, { ...zsk, state: "retired", state_since: "2026-01-02T00:00:00.000Z" }, next],
    };
    await store.put(rolled);
    assert.deepEqual(await store.get(z.zone_id), rolled);
    const done = { ...rolled, keys: [ksk, { ...next, state: "active" as const }] };
    await store.put(done);
    assert.deepEqual(await store.get(z.zone_id), done);
  });

  it("deletes a zone's state and keys, and says whether there was any", async (store) => {
    const a = signed();
    const b = signed();
    await store.put(a);
    await store.put(b);
    assert.equal(await store.delete(a.zone_id), true);
    assert.equal(await store.get(a.zone_id), undefined);
    assert.equal(await store.delete(a.zone_id), false);
    assert.deepEqual(await store.get(b.zone_id), b, "another zone's keys are untouched");
  });
});
