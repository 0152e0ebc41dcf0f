import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { StoredSetting, ZoneSettingsStore } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const row = (zoneId: string, id: string, value: string | number, modifiedOn = 1000, accountId = A): StoredSetting => ({
  zoneId,
  accountId,
  id,
  value,
  modifiedOn,
});

export const describeZoneSettingsStore = storeContract<ZoneSettingsStore>("ZoneSettingsStore", (it) => {
  it("settings are kept per zone, a string or a number, read by zone and all together in order", async (store) => {
    await store.put([row("z2", "ssl", "full", 5, B)]);
    await store.put([row("z1", "websockets", "off"), row("z1", "browser_cache_ttl", 3600)]);
    assert.deepEqual(await store.zone("z1"), [row("z1", "browser_cache_ttl", 3600), row("z1", "websockets", "off")]);
    assert.deepEqual(await store.all(), [row("z1", "browser_cache_ttl", 3600), row("z1", "websockets", "off"), row("z2", "ssl", "full", 5, B)]);
    assert.deepEqual(await store.zone("nothing"), []);
  });

  it("a second put of a setting replaces its value and time; a put with nothing changes nothing", async (store) => {
    await store.put([row("z1", "ssl", "full", 1000)]);
    await store.put([row("z1", "ssl", "strict", 2_000_000_000_000)]);
    await store.put([]);
    assert.deepEqual(await store.zone("z1"), [row("z1", "ssl", "strict", 2_000_000_000_000)]);
  });

  it("a put writes all its settings or none", async (store) => {
    await store.put([row("z1", "ssl", "full")]);
    const bad = { ...row("z1", "websockets", "off"), modifiedOn: null as unknown as number };
    await assert.rejects(store.put([row("z1", "ssl", "off"), bad]));
    assert.deepEqual(await store.zone("z1"), [row("z1", "ssl", "full")]);
  });

  it("deleting a zone's settings leaves other zones' alone", async (store) => {
    await store.put([row("z1", "ssl", "full"), row("z2", "ssl", "off", 1000, B)]);
    await store.deleteZone("z1");
    await store.deleteZone("z1");
    assert.deepEqual(await store.all(), [row("z2", "ssl", "off", 1000, B)]);
  });
});
