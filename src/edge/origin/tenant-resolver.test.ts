import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { createServer } from "node:net";
import { describe, it } from "node:test";
import * as dnsPacket from "dns-packet";
import { ADDRESSES_PER_NAME, KEPT_NAMES_PER_ACCOUNT, LOOKUPS_PER_ACCOUNT, MAX_KEPT_NAMES, TenantResolver } from "./tenant-resolver.js";

/**
 * A name server on loopback (UDP, and TCP for answers past 512 bytes, as c-ares retries a truncated one): every name
 * exists; `<n>.many.test` has n A records (198.18.x.y), any other name one (192.0.2.1), TTL 300. Counts queries.
 */
async function startNameServer(): Promise<{ server: string; queries: () => number; close: () => void }> {
  let queries = 0;
  const answer = (msg: Buffer): Buffer => {
    const query = dnsPacket.decode(msg);
    const q = query.questions![0];
    queries++;
    const many = /^(\d+)\.many\.test$/.exec(q.name);
    const count = q.type !== "A" ? 0 : many ? Number(many[1]) : 1;
    const answers: dnsPacket.Answer[] = Array.from({ length: count }, (_, i) => ({
      type: "A",
      name: q.name,
      ttl: 300,
      class: "IN",
      data: many ? `198.18.${i >> 8}.${i & 255}` : "192.0.2.1",
    }));
    const flags = dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE;
    return dnsPacket.encode({ type: "response", id: query.id, flags, questions: [q], answers });
  };
  const udp = createSocket("udp4");
  udp.on("message", (msg, rinfo) => {
    let reply = answer(msg);
    if (reply.length > 512) {
      const query = dnsPacket.decode(msg);
      reply = dnsPacket.encode({ type: "response", id: query.id, flags: dnsPacket.TRUNCATED_RESPONSE, questions: query.questions });
    }
    udp.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
  const port = udp.address().port;
  const tcp = createServer((socket) => {
    let buffered = Buffer.alloc(0);
    socket.on("error", () => undefined);
    socket.on("data", (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
        const msg = buffered.subarray(2, 2 + buffered.readUInt16BE(0));
        buffered = buffered.subarray(2 + msg.length);
        socket.write(dnsPacket.streamEncode(dnsPacket.decode(answer(msg))));
      }
    });
  });
  await new Promise<void>((resolve) => tcp.listen(port, "127.0.0.1", resolve));
  return {
    server: `127.0.0.1:${port}`,
    queries: () => queries,
    close: () => {
      udp.close();
      tcp.close();
    },
  };
}

/** `count` lookups of `name(i)` for `account`, LOOKUPS_PER_ACCOUNT at a time (its allowance: none refused). */
async function lookUpMany(resolver: TenantResolver, account: string, count: number, name: (i: number) => string): Promise<void> {
  for (let i = 0; i < count; i += LOOKUPS_PER_ACCOUNT) {
    const batch = Array.from({ length: Math.min(LOOKUPS_PER_ACCOUNT, count - i) }, (_, j) => resolver.addresses(account, name(i + j)));
    for (const found of await Promise.all(batch)) assert.equal(found.length, 1);
  }
}

describe("TenantResolver's kept answers against a hostile account", () => {
  it("one account's many names push out its own kept answers, not another account's", { timeout: 600_000 }, async () => {
    const ns = await startNameServer();
    try {
      const resolver = new TenantResolver([ns.server], 20_000);
      assert.deepEqual(await resolver.addresses("account-b", "www.b.test"), ["192.0.2.1"]);
      // Account A: as many names as the whole cache holds (a wildcard of its own answers them all).
      await lookUpMany(resolver, "account-a", MAX_KEPT_NAMES, (i) => `n${i}.a.test`);
      const before = ns.queries();
      assert.deepEqual(await resolver.addresses("account-b", "www.b.test"), ["192.0.2.1"]);
      assert.equal(ns.queries(), before, "account B's answer still kept: no query went out for it");
      // Account A's latest names are kept, its oldest are not (KEPT_NAMES_PER_ACCOUNT of its own at most).
      await resolver.addresses("account-a", `n${MAX_KEPT_NAMES - 1}.a.test`);
      assert.equal(ns.queries(), before, "account A's latest answer kept");
      await resolver.addresses("account-a", `n${MAX_KEPT_NAMES - 1 - KEPT_NAMES_PER_ACCOUNT}.a.test`);
      assert.ok(ns.queries() > before, "account A's answer past its allowance was not kept");
    } finally {
      ns.close();
    }
  });

  it("a name written in other letter cases or with a final dot is the same kept answer, not another lookup", async () => {
    const ns = await startNameServer();
    try {
      const resolver = new TenantResolver([ns.server], 20_000);
      assert.deepEqual(await resolver.addresses("account-a", "www.b.test"), ["192.0.2.1"]);
      const before = ns.queries();
      for (const name of ["WWW.B.TEST", "Www.b.Test", "www.b.test.", "WWW.B.TEST."]) {
        assert.deepEqual(await resolver.addresses("account-a", name), ["192.0.2.1"], name);
        assert.equal(ns.queries(), before, `${name}: no query went out`);
      }
    } finally {
      ns.close();
    }
  });

  it("a name with hundreds of addresses: ADDRESSES_PER_NAME used and kept, also past the 256 Node gives TTLs for", async () => {
    const ns = await startNameServer();
    try {
      const resolver = new TenantResolver([ns.server], 20_000);
      for (const count of [200, 1000]) {
        const found = await resolver.addresses("account-a", `${count}.many.test`);
        assert.equal(found.length, ADDRESSES_PER_NAME, `${count} records`);
        assert.deepEqual(found.slice(0, 2), ["198.18.0.0", "198.18.0.1"]);
        const before = ns.queries();
        assert.deepEqual(await resolver.addresses("account-b", `${count}.many.test`), found);
        assert.equal(ns.queries(), before, `${count} records: the answer is kept`);
      }
    } finally {
      ns.close();
    }
  });
});
