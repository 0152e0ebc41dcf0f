import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { Incoming, JournalEntry, Outgoing, Peer, TsigKeyEntry } from "./model.js";
import type { TransferStore } from "./store.js";

const tsig = (id: string, account = "acc-a"): TsigKeyEntry => ({
  id,
  account_id: account,
  name: `${id}.example`,
  algorithm: "hmac-sha256",
  secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQ=",
});
const peer = (id: string, tsigId: string | null = null): Peer => ({
  id,
  account_id: "acc-a",
  name: id,
  ip: "192.0.2.53",
  port: 5353,
  tsig_id: tsigId,
  ixfr_enable: true,
});
const rr = (n: number) => Buffer.from([n, n, n]);
const entry = (from: number, records: number): JournalEntry => ({
  from_serial: from,
  to_serial: from + 1,
  from_soa: rr(from),
  to_soa: rr(from + 1),
  removed: [],
  added: Array.from({ length: records }, (_, i) => rr(i)),
});

/** What every transfer store does (run against SQLite by sqlite-store.test.ts). */
export const describeTransferStore = storeContract<TransferStore>("TransferStore", (it) => {
  it("keeps TSIG keys and gives the secret back as it was put", async (store) => {
    await store.putTsig(tsig("k1"));
    await store.putTsig(tsig("k2", "acc-b"));
    await store.putTsig({ ...tsig("k1"), name: "renamed.example" });
    assert.deepEqual(await store.listTsigs(), [{ ...tsig("k1"), name: "renamed.example" }, tsig("k2", "acc-b")]);
    await store.deleteTsig("k1");
    assert.deepEqual(await store.listTsigs(), [tsig("k2", "acc-b")]);
  });

  it("keeps peers and outgoing configurations", async (store) => {
    await store.putPeer(peer("p1", "k1"));
    await store.putPeer({ ...peer("p1"), port: 53 });
    assert.deepEqual(await store.listPeers(), [{ ...peer("p1"), port: 53 }]);
    const o: Outgoing = {
      zone_id: "z1",
      account_id: "acc-a",
      peers: ["p1"],
      enabled: true,
      created_time: "2026-11-24T00:00:00.000Z",
      last_transferred_time: null,
    };
    await store.putOutgoing(o);
    await store.putOutgoing({ ...o, enabled: false, last_transferred_time: "2026-11-24T01:00:00.000Z" });
    assert.deepEqual(await store.listOutgoing(), [{ ...o, enabled: false, last_transferred_time: "2026-11-24T01:00:00.000Z" }]);
    await store.deleteOutgoing("z1");
    await store.deletePeer("p1");
    assert.deepEqual([await store.listOutgoing(), await store.listPeers()], [[], []]);
  });

  it("keeps secondary zones' incoming configurations and their refresh times", async (store) => {
    const i: Incoming = {
      zone_id: "z1",
      account_id: "acc-a",
      peers: ["p1", "p2"],
      auto_refresh_seconds: 3600,
      created_time: "2026-11-24T00:00:00.000Z",
      modified_time: "2026-11-24T00:00:00.000Z",
      checked_time: null,
      last_transferred_time: null,
    };
    await store.putIncoming(i);
    await store.putIncoming({ ...i, zone_id: "z2", peers: [] });
    const refreshed = { ...i, peers: ["p2"], checked_time: "2026-11-24T01:00:00.000Z", last_transferred_time: "2026-11-24T01:00:00.000Z" };
    await store.putIncoming(refreshed);
    assert.deepEqual(await store.listIncoming(), [refreshed, { ...i, zone_id: "z2", peers: [] }]);
    await store.deleteIncoming("z1");
    assert.deepEqual(
      (await store.listIncoming()).map((x) => x.zone_id),
      ["z2"],
    );
  });

  it("keeps a zone's journal in order within its bounds, dropping the oldest changes", async (store) => {
    const bounds = { maxEntries: 3, maxRecords: 10 };
    for (let s = 1; s <= 4; s++) await store.appendJournal("z1", entry(s, 2), bounds);
    await store.appendJournal("z2", entry(100, 1), bounds);
    assert.deepEqual(
      (await store.journal("z1")).map((e) => e.from_serial),
      [2, 3, 4],
      "at most 3 changes",
    );
    assert.deepEqual((await store.journal("z1"))[2], entry(4, 2), "records come back as they went in");
    await store.appendJournal("z1", entry(5, 7), bounds);
    assert.deepEqual(
      (await store.journal("z1")).map((e) => e.from_serial),
      [4, 5],
      "at most 10 records",
    );
    await store.appendJournal("z1", entry(6, 11), bounds);
    assert.deepEqual(await store.journal("z1"), [], "a change larger than the bound leaves nothing to build an IXFR from");
    await store.deleteJournal("z2");
    assert.deepEqual(await store.journal("z2"), []);
  });
});
