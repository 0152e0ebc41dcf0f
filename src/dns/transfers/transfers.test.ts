import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import Cloudflare from "cloudflare";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRecord, createZone, dig, digAvailable, encodeQuery, rcodeOf, startDnsPlatform } from "../testing/helpers.js";
import { readTsig, sign, TsigError } from "../nameserver/tsig.js";
import { freePort, kdig, knotAvailable, startSecondaryKnot, until, type Knot } from "../testing/knot.js";

const Z = "xfr.example";
const OTHER = "plain.example";
const secret = () => randomBytes(32).toString("base64");

/** dig's -y argument. */
const key = (algo: string, name: string, s: string) => ["-y", `${algo}:${name}:${s}`];

describe("zone transfers: TSIG, peers, outgoing transfers and IXFR, with dig, kdig and Knot as the secondary", async () => {
  const tools = (await digAvailable) && (await knotAvailable);
  let p: TestPlatform;
  let port: number;
  let knot: Knot | undefined;
  let knotPort: number;
  let zoneId: string;
  let tsigSecret: string;
  let tsigId: string;
  let peerId: string;
  let accountB: string;
  let tokenB: Record<string, string>;

  before(async () => {
    ({ p, port } = await startDnsPlatform());
    zoneId = await createZone(p, Z);
    await createZone(p, OTHER);
    await createRecord(p, zoneId, { type: "A", name: "www", content: "203.0.113.5" });
    const second = await p.api("POST", "/accounts", { name: "Second" }, p.keyHeaders());
    accountB = second.body.result.id;
    const t = await p.api(
      "POST",
      "/user/tokens",
      { name: "B only", policies: [{ resources: { [`com.cloudflare.api.account.${accountB}`]: "*" }, permission_groups: [{ id: "dns_edit" }] }] },
      p.keyHeaders(),
    );
    tokenB = { authorization: `Bearer ${t.body.result.value}` };
    knotPort = await freePort();
  });
  after(async () => {
    await knot?.stop();
    await p?.dispose();
  });

  const A = () => `/accounts/${p.accountId}/secondary_dns`;

  it("keeps TSIG keys per account: the secret shown once, sealed at rest, never visible or usable from another account", async () => {
    tsigSecret = secret();
    const created = await p.api("POST", `${A()}/tsigs`, { name: "xfr-key.", algo: "hmac-sha256.", secret: tsigSecret });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    assert.deepEqual({ ...created.body.result, id: undefined }, { id: undefined, name: "xfr-key.", algo: "hmac-sha256.", secret: tsigSecret });
    tsigId = created.body.result.id;
    const got = await p.api("GET", `${A()}/tsigs/${tsigId}`);
    assert.equal(got.body.result.secret, tsigSecret, "the secret is answered to who may edit the key (Terraform reads it back)");
    assert.equal((await p.api("GET", `${A()}/tsigs`)).body.result.length, 1);
    // Account B: neither listed, nor readable, nor changeable, nor deletable, nor usable by its peers.
    const b = `/accounts/${accountB}/secondary_dns`;
    assert.deepEqual((await p.api("GET", `${b}/tsigs`, undefined, tokenB)).body.result, []);
    assert.equal((await p.api("GET", `${b}/tsigs/${tsigId}`, undefined, tokenB)).status, 404);
    assert.equal((await p.api("PUT", `${b}/tsigs/${tsigId}`, { name: "x.", algo: "hmac-sha256.", secret: secret() }, tokenB)).status, 404);
    assert.equal((await p.api("DELETE", `${b}/tsigs/${tsigId}`, undefined, tokenB)).status, 404);
    assert.equal((await p.api("GET", `${A()}/tsigs`, undefined, tokenB)).status, 403, "B's token cannot reach A's account");
    const stolen = await p.api("POST", `${b}/peers`, { name: "thief", ip: "127.0.0.1", port: 53, tsig_id: tsigId }, tokenB);
    assert.equal(stolen.status, 400, JSON.stringify(stolen.body));
    assert.match(stolen.body.errors[0].message, /tsig_id/);
    // Bad input: a clear 400 and nothing stored.
    for (const bad of [
      { name: "k.", algo: "hmac-sha3.", secret: secret() },
      { name: "bad name", algo: "hmac-sha256.", secret: secret() },
      { name: "k.", algo: "hmac-sha256.", secret: "c2hvcnQ=" },
      { name: "xfr-key", algo: "hmac-sha512.", secret: secret() },
    ]) {
      const r = await p.api("POST", `${A()}/tsigs`, bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
    }
    assert.equal((await p.api("GET", `${A()}/tsigs`)).body.result.length, 1);
    // md5 and sha512 are taken too; an update without a secret keeps it.
    const md5Secret = secret();
    const md5 = await p.api("POST", `${A()}/tsigs`, { name: "old-peer.", algo: "hmac-md5.sig-alg.reg.int.", secret: md5Secret });
    assert.equal(md5.status, 200);
    const renamed = await p.api("PUT", `${A()}/tsigs/${md5.body.result.id}`, { name: "old-peer2.", algo: "hmac-sha512." });
    assert.deepEqual([renamed.body.result.name, renamed.body.result.algo, renamed.body.result.secret], ["old-peer2.", "hmac-sha512.", md5Secret]);
    assert.equal((await p.api("DELETE", `${A()}/tsigs/${md5.body.result.id}`)).status, 200);
  });

  it("keeps peers per account, and a zone's outgoing transfers take only its own account's peers", async () => {
    const created = await p.api("POST", `${A()}/peers`, { name: "knot", ip: "127.0.0.1", port: knotPort, tsig_id: tsigId, ixfr_enable: true });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    peerId = created.body.result.id;
    assert.deepEqual(
      { ...created.body.result, id: undefined },
      { id: undefined, name: "knot", ip: "127.0.0.1", port: knotPort, tsig_id: tsigId, ixfr_enable: true },
    );
    assert.equal((await p.api("POST", `${A()}/peers`, { name: "x", ip: "not-an-ip" })).status, 400);
    const b = `/accounts/${accountB}/secondary_dns`;
    assert.equal((await p.api("GET", `${b}/peers/${peerId}`, undefined, tokenB)).status, 404);
    assert.deepEqual((await p.api("GET", `${b}/peers`, undefined, tokenB)).body.result, []);
    const peerB = (await p.api("POST", `${b}/peers`, { name: "b", ip: "127.0.0.1" }, tokenB)).body.result.id;
    // A's zone cannot list B's peer, and B cannot touch A's zone.
    const mixed = await p.api("POST", `/zones/${zoneId}/secondary_dns/outgoing`, { name: `${Z}.`, peers: [peerB] });
    assert.equal(mixed.status, 400, JSON.stringify(mixed.body));
    assert.equal((await p.api("GET", `/zones/${zoneId}/secondary_dns/outgoing`)).status, 404, "nothing was stored");
    assert.equal((await p.api("POST", `/zones/${zoneId}/secondary_dns/outgoing`, { peers: [peerB] }, tokenB)).status, 404);
    // Before any outgoing configuration, --axfr-allow decides (loopback by default): unsigned AXFR works.
    assert.match(await dig(port, [Z, "AXFR"]), /XFR size: 5 records/);
    const out = await p.api("POST", `/zones/${zoneId}/secondary_dns/outgoing`, { name: `${Z}.`, peers: [peerId] });
    assert.equal(out.status, 200, JSON.stringify(out.body));
    assert.deepEqual([out.body.result.peers, out.body.result.enabled], [[peerId], true]);
    assert.equal((await p.api("GET", `/zones/${zoneId}/secondary_dns/outgoing/status`)).body.result, "Enabled");
    // In use: neither the peer nor its key can go.
    assert.equal((await p.api("DELETE", `${A()}/peers/${peerId}`)).status, 400);
    assert.equal((await p.api("DELETE", `${A()}/tsigs/${tsigId}`)).status, 400);
    // Incoming transfers are for secondary zones: on a full zone they are refused clearly.
    assert.equal((await p.api("POST", `/zones/${zoneId}/secondary_dns/incoming`, { peers: [peerId], auto_refresh_seconds: 3600 })).status, 400);
  });

  it("is driven by the official cloudflare SDK (dns.zoneTransfers: tsigs, peers, outgoing)", async () => {
    const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    const account_id = p.accountId;
    const sdkKey = await cf.dns.zoneTransfers.tsigs.create({ account_id, name: "sdk-key.", algo: "hmac-sha512.", secret: secret() });
    assert.equal(sdkKey.algo, "hmac-sha512.");
    const listed = [];
    for await (const t of cf.dns.zoneTransfers.tsigs.list({ account_id })) listed.push(t.name);
    assert.deepEqual(listed.sort(), ["sdk-key.", "xfr-key."]);
    const peer = await cf.dns.zoneTransfers.peers.create({ account_id, name: "sdk-peer" });
    const updated = await cf.dns.zoneTransfers.peers.update(peer.id, { account_id, name: "sdk-peer", ip: "192.0.2.99", port: 5353, tsig_id: sdkKey.id });
    assert.deepEqual([updated.ip, updated.port, updated.tsig_id], ["192.0.2.99", 5353, sdkKey.id]);
    const zone = await createZone(p, "sdk-xfr.example");
    const out = await cf.dns.zoneTransfers.outgoing.create({ zone_id: zone, name: "sdk-xfr.example.", peers: [peer.id] });
    assert.deepEqual(out.peers, [peer.id]);
    assert.equal(await cf.dns.zoneTransfers.outgoing.disable({ zone_id: zone }), "Disabled");
    assert.equal(await cf.dns.zoneTransfers.outgoing.status.get({ zone_id: zone }), "Disabled");
    assert.equal(await cf.dns.zoneTransfers.outgoing.enable({ zone_id: zone }), "Enabled");
    assert.match(String(await cf.dns.zoneTransfers.outgoing.forceNotify({ zone_id: zone })), /NOTIFY sent to 1 peer/);
    await cf.dns.zoneTransfers.outgoing.delete({ zone_id: zone });
    await cf.dns.zoneTransfers.peers.delete(peer.id, { account_id });
    await cf.dns.zoneTransfers.tsigs.delete(sdkKey.id, { account_id });
    await assert.rejects(cf.dns.zoneTransfers.tsigs.get(sdkKey.id, { account_id }), (e: { status?: number }) => e.status === 404);
  });

  it("transfers a zone with outgoing peers only to them, signed with the peer's key: unsigned or badly signed requests are refused", async (t) => {
    if (!tools) return t.skip("dig or kdig not installed");
    const signed = await dig(port, [Z, "AXFR", ...key("hmac-sha256", "xfr-key", tsigSecret)]);
    assert.match(signed, /XFR size: 5 records/);
    assert.match(signed, /xfr-key\.\s+0\s+ANY\s+TSIG\s+hmac-sha256\./, "the answer is signed (and dig checked the signature)");
    assert.doesNotMatch(signed, /could not be validated|tsig verify failure|Couldn't verify/i);
    // Unsigned, from loopback (which --axfr-allow lets in): the peer at this address has a key, so no.
    assert.match(await dig(port, [Z, "AXFR"]), /Transfer failed/);
    const wrong = await dig(port, [Z, "AXFR", ...key("hmac-sha256", "xfr-key", secret())]);
    assert.match(wrong, /BADSIG/);
    assert.doesNotMatch(wrong, /XFR size/);
    assert.match(await dig(port, [Z, "AXFR", ...key("hmac-sha256", "unknown-key", tsigSecret)]), /BADKEY/);
    assert.match(await kdig(port, [Z, "AXFR", ...key("hmac-sha512", "xfr-key", tsigSecret)]), /BADKEY/, "the right name with another algorithm");
    assert.match(await kdig(port, [Z, "AXFR", ...key("hmac-sha256", "xfr-key", tsigSecret)]), /5 records/, "kdig verifies it too");
    // A signed SOA query (what a secondary sends before transferring) gets a signed answer, over UDP and TCP.
    for (const transport of [[], ["+tcp"]]) {
      const soa = await dig(port, [Z, "SOA", ...transport, ...key("hmac-sha256", "xfr-key", tsigSecret)]);
      assert.match(soa, /status: NOERROR/);
      assert.match(soa, /xfr-key\.\s+0\s+ANY\s+TSIG/);
      assert.doesNotMatch(soa, /could not be validated|Couldn't verify/i);
    }
    assert.match(await dig(port, [Z, "SOA", ...key("hmac-sha256", "xfr-key", secret())]), /BADSIG/);
    // A request signed 20 minutes ago: BADTIME, with a reply signed by the key.
    const old = await staleSignedAxfr(port, tsigSecret);
    assert.equal(rcodeOf(packet.decode(old)), 9, "NOTAUTH");
    assert.equal(readTsig(old)?.error, TsigError.BADTIME);
    assert.equal(readTsig(old)?.otherData.length, 6, "with our time");
    // The zone without outgoing transfers still follows --axfr-allow.
    assert.match(await dig(port, [OTHER, "AXFR"]), /XFR size: 4 records/);
    // Disabled: nobody transfers, not even the signed peer.
    assert.equal((await p.api("POST", `/zones/${zoneId}/secondary_dns/outgoing/disable`)).body.result, "Disabled");
    assert.match(await dig(port, [Z, "AXFR", ...key("hmac-sha256", "xfr-key", tsigSecret)]), /Transfer failed/);
    assert.equal((await p.api("POST", `/zones/${zoneId}/secondary_dns/outgoing/enable`)).body.result, "Enabled");
  });

  it("Knot as the secondary: TSIG-signed AXFR, then NOTIFY (signed) and IXFR after each change", async (t) => {
    if (!tools) return t.skip("knot or dig not installed");
    knot = await startSecondaryKnot(knotPort, port, Z, { name: `www.${Z}`, type: "A", answer: /203\.0\.113\.5/ }, tsigSecret);
    const k = knot;
    assert.match(k.log(), /AXFR, incoming.*finished/);
    await createRecord(p, zoneId, { type: "TXT", name: "after", content: "change one" });
    await until(async () => /change one/.test(await kdig(k.port, [`after.${Z}`, "TXT", "+short"])), "Knot to pick up the change");
    await createRecord(p, zoneId, { type: "TXT", name: "after2", content: "change two" });
    await until(async () => /change two/.test(await kdig(k.port, [`after2.${Z}`, "TXT", "+short"])), "Knot to pick up the second change");
    assert.match(k.log(), /notify, incoming/, "Knot took our signed NOTIFY (its ACL requires the key)");
    await until(async () => /secondary acknowledged NOTIFY/.test(p.logs()), "Knot's signed acknowledgement to be accepted");
    assert.match(k.log(), /IXFR, incoming.*finished/);
    assert.doesNotMatch(k.log(), /fallback to AXFR|XFR.*failed|refresh.*failed/);
    assert.match(p.logs(), /"kind":"IXFR"/);
    const serial = Number((await kdig(k.port, [Z, "SOA", "+short"])).trim().split(/\s+/)[2]);
    const ours = (await p.api("GET", `/zones/${zoneId}/secondary_dns/outgoing`)).body.result;
    assert.equal(serial, ours.soa_serial, "Knot holds our current serial");
    assert.ok(ours.last_transferred_time, "the transfer is recorded");
  });

  it("answers IXFR from the journal, only the current SOA when up to date, and the whole zone when the journal does not reach back", async (t) => {
    if (!tools) return t.skip("dig not installed");
    const y = key("hmac-sha256", "xfr-key", tsigSecret);
    const before = (await p.api("GET", `/zones/${zoneId}/secondary_dns/outgoing`)).body.result.soa_serial as number;
    await createRecord(p, zoneId, { type: "A", name: "ixfr", content: "198.51.100.7" });
    const now = (await p.api("GET", `/zones/${zoneId}/secondary_dns/outgoing`)).body.result.soa_serial as number;
    const inc = await dig(port, [Z, `IXFR=${before}`, ...y]);
    const rrs = inc.split("\n").filter((l) => l && !l.startsWith(";") && !/TSIG/.test(l));
    assert.deepEqual(
      rrs.map((l) => l.split(/\s+/).slice(3, 5).join(" ") + (/SOA/.test(l) ? ` ${l.split(/\s+/)[6]}` : "")),
      [
        `SOA ns1.edge-platform.test. ${now}`,
        `SOA ns1.edge-platform.test. ${before}`,
        `SOA ns1.edge-platform.test. ${now}`,
        "A 198.51.100.7",
        `SOA ns1.edge-platform.test. ${now}`,
      ],
    );
    const upToDate = (await dig(port, [Z, `IXFR=${now}`, ...y])).split("\n").filter((l) => l && !l.startsWith(";") && !/TSIG/.test(l));
    assert.equal(upToDate.length, 1, "only the SOA");
    const tooOld = (await dig(port, [Z, "IXFR=1", ...y])).split("\n").filter((l) => l && !l.startsWith(";") && !/TSIG/.test(l));
    assert.match(tooOld[0], /SOA/);
    assert.match(tooOld[1], /\sNS\s/, "an AXFR-style answer: SOA, then the zone");
    assert.ok(tooOld.some((l) => /198\.51\.100\.7/.test(l)));
  });
});

/** An AXFR request signed 20 minutes ago with the right key, sent over TCP; the reply's bytes. */
async function staleSignedAxfr(port: number, s: string): Promise<Buffer> {
  const q = encodeQuery(Z, "AXFR");
  const signed = sign(q, { name: "xfr-key", algorithm: "hmac-sha256", secret: Buffer.from(s, "base64") }, { time: Math.floor(Date.now() / 1000) - 1200 });
  return tcpRaw(port, signed.message);
}

function tcpRaw(port: number, msg: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port, host: "127.0.0.1" });
    const timer = setTimeout(() => sock.destroy(new Error("no TCP reply")), 10_000);
    let buf = Buffer.alloc(0);
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        clearTimeout(timer);
        sock.end();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
    sock.on("error", reject);
    const framed = Buffer.alloc(msg.length + 2);
    framed.writeUInt16BE(msg.length);
    msg.copy(framed, 2);
    sock.write(framed);
  });
}

describe("transfer settings and the IXFR journal across a restart", async () => {
  const tools = await digAvailable;
  const stateDir = mkdtempSync(join(tmpdir(), "edge-xfr-restart-"));
  after(() => rmSync(stateDir, { recursive: true, force: true }));

  it("keeps keys (sealed), peers, outgoing transfers and the journal: IXFR after a restart spans changes from before and after it", async (t) => {
    if (!tools) return t.skip("dig not installed");
    const first = await startDnsPlatform([], stateDir);
    const auth = { authorization: `Bearer ${first.p.token}` };
    const s = secret();
    const y = key("hmac-sha512", "restart-key", s);
    const rrsOf = (out: string) => out.split("\n").filter((l) => l && !l.startsWith(";") && !/TSIG/.test(l));
    const serialOf = async (port: number) => Number(rrsOf(await dig(port, [Z, "SOA", ...y]))[0].split(/\s+/)[6]);
    let zoneId: string;
    let start: number;
    let peerId: string;
    try {
      zoneId = await createZone(first.p, Z);
      const tsigId = (await first.p.api("POST", `/accounts/${first.p.accountId}/secondary_dns/tsigs`, { name: "restart-key", algo: "hmac-sha512", secret: s }))
        .body.result.id;
      peerId = (await first.p.api("POST", `/accounts/${first.p.accountId}/secondary_dns/peers`, { name: "local", ip: "127.0.0.1", tsig_id: tsigId })).body
        .result.id;
      assert.equal((await first.p.api("POST", `/zones/${zoneId}/secondary_dns/outgoing`, { peers: [peerId] })).status, 200);
      assert.match(await dig(first.port, [Z, "AXFR", ...y]), /XFR size: 4 records/);
      start = await serialOf(first.port);
      await createRecord(first.p, zoneId, { type: "TXT", name: "before-restart", content: "one" });
    } finally {
      await first.p.stop();
    }
    const second = await startDnsPlatform([], stateDir);
    try {
      const after = await second.p.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: "after-restart", content: "two" }, auth);
      assert.equal(after.status, 200, JSON.stringify(after.body));
      const now = await serialOf(second.port);
      const rrs = rrsOf(await dig(second.port, [Z, `IXFR=${start}`, ...y]));
      assert.deepEqual(
        rrs.map((l) => l.split(/\s+/).slice(3, 5).join(" ")),
        [
          "SOA ns1.edge-platform.test.",
          "SOA ns1.edge-platform.test.",
          "SOA ns1.edge-platform.test.",
          'TXT "one"',
          "SOA ns1.edge-platform.test.",
          "SOA ns1.edge-platform.test.",
          'TXT "two"',
          "SOA ns1.edge-platform.test.",
        ],
        "two changes, one from before the restart",
      );
      assert.equal(Number(rrs[0].split(/\s+/)[6]), now);
      assert.match(await dig(second.port, [Z, "AXFR"]), /Transfer failed/, "the peer rule survived: unsigned is still refused");
      // Deleting the zone removes its outgoing transfers: the peer is no longer in use.
      const peers = `/accounts/${first.p.accountId}/secondary_dns/peers/${peerId}`;
      assert.equal((await second.p.api("DELETE", peers, undefined, auth)).status, 400, "in use by the zone");
      await second.p.api("DELETE", `/zones/${zoneId}`, undefined, auth);
      await until(async () => (await second.p.api("DELETE", peers, undefined, auth)).status === 200, "the zone's outgoing transfers to go");
    } finally {
      await second.p.stop();
    }
  });
});
