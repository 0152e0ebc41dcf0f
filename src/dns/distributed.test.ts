import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import dgram from "node:dgram";
import { test, type TestContext } from "node:test";
import * as packet from "dns-packet";
import { newTestCredentials, startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { privatePostgres, testDatabase } from "../core/testing/services.js";
import { createRecord, createZone, rcodeOf, udpQuery, type DnsResponse } from "./testing/helpers.js";

// Two real `edgecli serve` nodes on one PostgreSQL: what is changed through one is answered over real UDP by the
// other. DNS needs no object store, so these tests need PostgreSQL only.

const HANG_GUARD = { timeout: 240_000 };
const SECRETS_KEY = randomBytes(32).toString("base64");
const NOERROR = 0;
const NXDOMAIN = 3;

/** Resolves when `check` resolves true, polling; the deadline only guards against a hang. */
async function until(check: () => Promise<boolean>, what: string, deadlineMs = 60_000): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > deadlineMs) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface DnsNode {
  p: TestPlatform;
  port: number;
  ask(name: string, type: string): Promise<DnsResponse>;
}

async function startNodes(t: TestContext, databaseUrl: string, args: string[] = []): Promise<[DnsNode, DnsNode]> {
  const credentials = newTestCredentials();
  const opts = { args: ["--database-url", databaseUrl, ...args], env: { EDGE_SECRETS_KEY: SECRETS_KEY }, credentials };
  const platforms: TestPlatform[] = [];
  t.after(() => Promise.all(platforms.map((p) => p.dispose())));
  platforms.push(...(await Promise.all([startTestPlatform(opts), startTestPlatform(opts)])));
  return platforms.map((p) => {
    const port = Number(p.endpoints.dns_udp.split(":").pop());
    return { p, port, ask: (name: string, type: string) => udpQuery(port, name, type) };
  }) as [DnsNode, DnsNode];
}

const soaSerial = (r: DnsResponse) => (r.answers?.find((a) => a.type === "SOA") as { data: { serial: number } } | undefined)?.data.serial;
const addresses = (r: DnsResponse) => (r.answers ?? []).flatMap((a) => (a.type === "A" ? [a.data] : []));

interface Notice {
  zone: string;
  serial: number;
  /** The port it came from: each node sends from a socket of its own. */
  from: number;
  id: number;
}

/** A secondary on loopback: acknowledges every NOTIFY and keeps one entry per NOTIFY sent (retransmissions once). */
async function startSecondary(t: TestContext) {
  const notices: Notice[] = [];
  const seen = new Set<string>();
  const socket = dgram.createSocket("udp4");
  socket.on("message", (msg, rinfo) => {
    const q = packet.decode(msg);
    if ((((q.flags ?? 0) >> 11) & 0xf) !== 4) return;
    const ack = Buffer.from(msg);
    ack[2] |= 0x80;
    socket.send(ack, rinfo.port, rinfo.address);
    if (seen.has(`${rinfo.port} ${q.id}`)) return;
    seen.add(`${rinfo.port} ${q.id}`);
    const soa = q.answers?.find((a) => a.type === "SOA") as { data: { serial: number } } | undefined;
    notices.push({ zone: q.questions![0].name, serial: soa?.data.serial ?? -1, from: rinfo.port, id: q.id ?? 0 });
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  t.after(() => socket.close());
  const waitFor = (zone: string, count: number) =>
    until(async () => notices.filter((n) => n.zone === zone).length >= count, `NOTIFY number ${count} for ${zone}`);
  return { port: socket.address().port, notices, waitFor };
}

test(
  "two nodes on one PostgreSQL: a record made through one is answered by the other's DNS, with the same serial; NOTIFY comes from the node changed through, once",
  HANG_GUARD,
  async (t) => {
    const db = await testDatabase(t);
    if (!db) return;
    const secondary = await startSecondary(t);
    const [a, b] = await startNodes(t, db.url, ["--notify", `127.0.0.1:${secondary.port}`]);

    const x = await createZone(a.p, "dist-x.example");
    await secondary.waitFor("dist-x.example", 1);
    const fromA = secondary.notices[0].from;
    await until(async () => rcodeOf(await b.ask("dist-x.example", "SOA")) === NOERROR, "node b to answer the zone made through node a");
    assert.equal(soaSerial(await b.ask("dist-x.example", "SOA")), soaSerial(await a.ask("dist-x.example", "SOA")));

    const made = Date.now();
    const www = await createRecord(a.p, x, { type: "A", name: "www.dist-x.example", content: "198.51.100.10" });
    assert.deepEqual(addresses(await a.ask("www.dist-x.example", "A")), ["198.51.100.10"], "node a answers at once");
    await until(async () => addresses(await b.ask("www.dist-x.example", "A")).length === 1, "node b to answer the record made through node a");
    t.diagnostic(`node b answered node a's record ${Date.now() - made} ms after node a's API call returned`);
    const serial = soaSerial(await a.ask("dist-x.example", "SOA"));
    assert.equal(soaSerial(await b.ask("dist-x.example", "SOA")), serial, "both nodes serve the serial stored for this content");
    await secondary.waitFor("dist-x.example", 2);

    // Node b has reloaded both of node a's changes: a NOTIFY of its own for them would come before this one.
    const y = await createZone(b.p, "dist-y.example");
    await secondary.waitFor("dist-y.example", 1);
    const fromB = secondary.notices.find((n) => n.zone === "dist-y.example")!.from;
    assert.notEqual(fromB, fromA);
    await until(async () => rcodeOf(await a.ask("dist-y.example", "SOA")) === NOERROR, "node a to answer the zone made through node b");

    // Deleted through node b: gone from node a.
    assert.equal((await b.p.api("DELETE", `/zones/${x}/dns_records/${www.id}`)).status, 200);
    await until(async () => rcodeOf(await a.ask("www.dist-x.example", "A")) === NXDOMAIN, "node a to stop answering the record deleted through node b");
    assert.equal(soaSerial(await a.ask("dist-x.example", "SOA")), soaSerial(await b.ask("dist-x.example", "SOA")));
    await secondary.waitFor("dist-x.example", 3);

    // Sync points: each node makes one more change after the last one it reloaded.
    await createZone(a.p, "dist-z.example");
    await secondary.waitFor("dist-z.example", 1);
    await until(async () => rcodeOf(await b.ask("dist-z.example", "SOA")) === NOERROR, "node b to answer the zone made through node a");
    await createRecord(b.p, y, { type: "TXT", name: "dist-y.example", content: '"last"' });
    await secondary.waitFor("dist-y.example", 2);

    const who = (port: number) => (port === fromA ? "a" : port === fromB ? "b" : `port ${port}`);
    assert.deepEqual(
      secondary.notices.map((n) => `${who(n.from)} ${n.zone}`),
      ["a dist-x.example", "a dist-x.example", "b dist-y.example", "b dist-x.example", "a dist-z.example", "b dist-y.example"],
      "each change is notified once, by the node it was made through",
    );
    const xSerials = secondary.notices.filter((n) => n.zone === "dist-x.example").map((n) => n.serial);
    assert.equal(xSerials[1], serial);
    assert.ok(xSerials[0] < xSerials[1] && xSerials[1] < xSerials[2], `serials grow: ${xSerials.join(", ")}`);

    // DNSSEC keys are not shared between nodes yet: signing is refused rather than served by one node only.
    const signed = await a.p.api("PATCH", `/zones/${x}/dnssec`, { status: "active" });
    assert.equal(signed.status, 400, JSON.stringify(signed.body));
    assert.equal(signed.body.errors[0].code, 9603);
    assert.equal((await a.p.api("GET", `/zones/${x}/dnssec`)).body.result.status, "disabled");
    // Nor is transfer state: a secondary zone is refused, and nothing is created.
    const secondaryZone = await a.p.api("POST", "/zones", { name: "dist-secondary.example", type: "secondary", account: { id: a.p.accountId } });
    assert.equal(secondaryZone.status, 400, JSON.stringify(secondaryZone.body));
    assert.equal(secondaryZone.body.errors[0].code, 9604);
    assert.equal((await a.p.api("GET", "/zones?name=dist-secondary.example")).body.result.length, 0);
  },
);

test(
  "PostgreSQL stopped: DNS writes are 503s naming it while both nodes' DNS answers from memory; started again, changes flow between nodes",
  HANG_GUARD,
  async (t) => {
    const server = await privatePostgres(t);
    if (!server) return;
    const [a, b] = await startNodes(t, server.url);
    const zone = await createZone(a.p, "outage.example");
    await createRecord(a.p, zone, { type: "A", name: "before.outage.example", content: "198.51.100.20" });
    await until(async () => addresses(await b.ask("before.outage.example", "A")).length === 1, "node b to answer the record");

    server.stop();
    for (const node of [a, b]) {
      const refused = await node.p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "during.outage.example", content: "198.51.100.21" });
      assert.equal(refused.status, 503, JSON.stringify(refused.body));
      assert.deepEqual(refused.body.errors, [
        { code: 10002, message: "PostgreSQL is unreachable from this node; the request was not carried out, retry it later" },
      ]);
      assert.deepEqual(addresses(await node.ask("before.outage.example", "A")), ["198.51.100.20"], "DNS answers from memory");
      assert.equal(rcodeOf(await node.ask("during.outage.example", "A")), NXDOMAIN, "the refused write left nothing");
    }

    await server.start();
    // The pool reconnects on demand: the first writes after the restart may still meet a closing connection.
    let added: { status: number } = { status: 0 };
    await until(async () => {
      added = await a.p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "after.outage.example", content: "198.51.100.22" });
      return added.status !== 503;
    }, "node a to write again");
    assert.equal(added.status, 200);
    await until(async () => addresses(await b.ask("after.outage.example", "A")).length === 1, "node b to answer the record made after the restart");
    assert.equal(soaSerial(await b.ask("outage.example", "SOA")), soaSerial(await a.ask("outage.example", "SOA")));
    assert.equal(rcodeOf(await b.ask("during.outage.example", "A")), NXDOMAIN);
  },
);

test(
  "two nodes on one PostgreSQL: batches sent through both at once never leave a zone past the record limit; a public suffix is refused on either",
  HANG_GUARD,
  async (t) => {
    const db = await testDatabase(t);
    if (!db) return;
    const [a, b] = await startNodes(t, db.url, ["--dns-max-records-per-zone", "10"]);
    const zone = await createZone(a.p, "dist-limit.example");
    await until(async () => rcodeOf(await b.ask("dist-limit.example", "SOA")) === NOERROR, "node b to answer the zone made through node a");
    const batch = (node: DnsNode, prefix: string) =>
      node.p.api("POST", `/zones/${zone}/dns_records/batch`, {
        posts: Array.from({ length: 6 }, (_, i) => ({ type: "TXT", name: `${prefix}${i}`, content: prefix })),
      });
    // Rounds of two six-record batches at once, one through each node: at most one of each pair fits in ten.
    for (let round = 0; round < 3; round++) {
      const [fromA, fromB] = await Promise.all([batch(a, `a${round}-`), batch(b, `b${round}-`)]);
      const passed = [fromA, fromB].filter((r) => r.status === 200).length;
      assert.ok(passed <= 1, `round ${round}: ${fromA.status} ${fromB.status}`);
      for (const r of [fromA, fromB]) if (r.status !== 200) assert.equal(r.body.errors[0].code, 81045, JSON.stringify(r.body));
      const count = (await a.p.api("GET", `/zones/${zone}/dns_records?per_page=100`)).body.result_info.total_count;
      assert.ok(count <= 10, `round ${round}: ${count} records`);
    }
    for (const node of [a, b]) {
      const refused = await node.p.api("POST", "/zones", { name: "co.uk", account: { id: node.p.accountId } });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.errors[0].code, 1099);
    }
  },
);
