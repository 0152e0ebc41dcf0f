import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { Resolver } from "node:dns/promises";
import * as packet from "dns-packet";
import type { TestPlatform } from "../../core/testing/platform.js";
import {
  createRecord,
  createZone,
  dig,
  digAvailable,
  encodeQuery,
  garbageFlood,
  rcodeOf,
  startDnsPlatform,
  tcpQuery,
  udpQuery,
  udpAsk,
  udpRaw,
  type DnsResponse,
} from "../testing/helpers.js";

const Z = "resolve.example";
const AA = 1 << 10;
const TC = 1 << 9;
const data = (r: DnsResponse, type?: string) => (r.answers ?? []).filter((a) => !type || a.type === type).map((a: any) => a.data);

describe("authoritative DNS server", () => {
  let p: TestPlatform;
  let port: number;
  let zoneId: string;
  let resolver: Resolver;
  // A stand-in secondary on 127.0.0.2: it receives NOTIFY and is the only address allowed to transfer.
  const secondary = dgram.createSocket("udp4");
  const notifies: { q: DnsResponse; from: dgram.RemoteInfo }[] = [];
  /** While set, the stand-in secondary does not acknowledge. */
  let silent = false;
  const acknowledgement = (q: DnsResponse) =>
    packet.encode({ id: q.id, type: "response", flags: (q.flags ?? 0) | AA, questions: q.questions } as packet.Packet);

  before(async () => {
    await new Promise<void>((r) => secondary.bind(0, "127.0.0.2", r));
    secondary.on("message", (msg, rinfo) => {
      const q = packet.decode(msg);
      notifies.push({ q, from: rinfo });
      if (!silent) secondary.send(acknowledgement(q), rinfo.port, rinfo.address);
    });
    ({ p, port } = await startDnsPlatform(["--notify", `127.0.0.2:${secondary.address().port}`, "--axfr-allow", "10.0.0.0/8"]));
    resolver = new Resolver({ timeout: 1000, tries: 3 });
    resolver.setServers([`127.0.0.1:${port}`]);
    zoneId = await createZone(p, Z);
    const recs: Record<string, unknown>[] = [
      { type: "A", name: "www", content: "203.0.113.1", ttl: 120 },
      { type: "A", name: "www", content: "203.0.113.2", ttl: 120 },
      { type: "AAAA", name: "www", content: "2001:db8:5::1", ttl: 120 },
      { type: "CNAME", name: "alias", content: `www.${Z}`, ttl: 600 },
      { type: "CNAME", name: "chain", content: `alias.${Z}`, ttl: 600 },
      { type: "CNAME", name: "dangling", content: `nowhere.${Z}` },
      { type: "A", name: "shop", content: "203.0.113.7", proxied: true },
      { type: "A", name: "*.wild", content: "203.0.113.9" },
      { type: "TXT", name: "exists.wild", content: "explicit" },
      { type: "A", name: "a.b.ent", content: "203.0.113.10" },
      { type: "TXT", name: "long", content: "x".repeat(300) },
      { type: "NS", name: "sub", content: `ns1.sub.${Z}` },
      { type: "A", name: "ns1.sub", content: "203.0.113.53" },
      { type: "MX", name: "mail", content: `mx.${Z}`, priority: 10 },
      { type: "SRV", name: "_sip._tcp", data: { priority: 1, weight: 2, port: 5060, target: `sip.${Z}` } },
      { type: "CAA", name: "mail", data: { flags: 0, tag: "issue", value: "ca.example" } },
      { type: "PTR", name: "ptr", content: `www.${Z}` },
      {
        type: "NAPTR",
        name: "enum",
        data: { order: 100, preference: 10, flags: "u", service: "E2U+sip", regex: "!^.*$!sip:x@resolve.example!", replacement: "." },
      },
      { type: "SSHFP", name: "host", data: { algorithm: 4, type: 2, fingerprint: "ab".repeat(32) } },
      { type: "TLSA", name: "_443._tcp", data: { usage: 3, selector: 1, matching_type: 1, certificate: "cd".repeat(32) } },
      { type: "SMIMEA", name: "smime", data: { usage: 3, selector: 0, matching_type: 1, certificate: "ef".repeat(32) } },
      { type: "DS", name: "sub", data: { key_tag: 12345, algorithm: 13, digest_type: 2, digest: "01".repeat(32) } },
      { type: "DNSKEY", name: "@", data: { flags: 257, protocol: 3, algorithm: 13, public_key: "AQID" } },
      { type: "URI", name: "_http._tcp", priority: 10, data: { weight: 1, target: "https://www.resolve.example/" } },
      { type: "SVCB", name: "_dns", data: { priority: 1, target: `dns.${Z}`, value: "alpn=dot port=853" } },
      { type: "HTTPS", name: "svc", data: { priority: 1, target: ".", value: 'alpn="h3,h2" ipv4hint=203.0.113.1' } },
      { type: "CERT", name: "cert", data: { type: 1, key_tag: 0, algorithm: 0, certificate: "AAEC" } },
    ];
    // The apex of a second zone is a CNAME into this one: answered flattened.
    const flat = await createZone(p, "flat.example");
    await createRecord(p, flat, { type: "CNAME", name: "@", content: `chain.${Z}` });
    for (let i = 0; i < 60; i++) recs.push({ type: "A", name: "big", content: `203.0.113.${100 + i}` });
    const r = await p.api("POST", `/zones/${zoneId}/dns_records/batch`, { posts: recs });
    assert.equal(r.status, 200, JSON.stringify(r.body));
  });
  after(async () => {
    secondary.close();
    await p?.dispose();
  });

  it("answers through Node's resolver: addresses, CNAME chasing, flattening, proxied names, wildcards", async () => {
    assert.deepEqual(
      (await resolver.resolve4(`www.${Z}`, { ttl: true })).sort((a, b) => a.address.localeCompare(b.address)),
      [
        { address: "203.0.113.1", ttl: 120 },
        { address: "203.0.113.2", ttl: 120 },
      ],
    );
    assert.deepEqual(await resolver.resolve6(`www.${Z}`), ["2001:db8:5::1"]);
    assert.deepEqual(await resolver.resolveCname(`alias.${Z}`), [`www.${Z}`]);
    assert.deepEqual((await resolver.resolve4(`chain.${Z}`)).sort(), ["203.0.113.1", "203.0.113.2"]);
    assert.deepEqual(
      (await resolver.resolve4("flat.example", { ttl: true })).map((a) => [a.address, a.ttl]).sort(),
      [
        ["203.0.113.1", 120],
        ["203.0.113.2", 120],
      ],
      "apex CNAME is flattened, with the smallest TTL of the chain",
    );
    assert.deepEqual(await resolver.resolve4(`shop.${Z}`, { ttl: true }), [
      { address: "192.0.2.10", ttl: 300 },
      { address: "192.0.2.11", ttl: 300 },
    ]);
    assert.deepEqual(await resolver.resolve6(`shop.${Z}`), ["2001:db8::10", "2001:db8::11"], "a proxied A name also answers AAAA from the edge");
    assert.deepEqual(await resolver.resolve4(`anything.wild.${Z}`), ["203.0.113.9"]);
    assert.deepEqual(await resolver.resolve4(`deep.er.wild.${Z}`), ["203.0.113.9"]);
    assert.deepEqual(await resolver.resolveTxt(`long.${Z}`), [["x".repeat(255), "x".repeat(45)]], "long TXT split into 255-byte strings");
    // Node 24's resolver adds `type: "MX"` / `type: "SRV"` to each record (Node 20 and 22 do not): the fields compared
    // are the record's own.
    assert.deepEqual(
      (await resolver.resolveMx(`mail.${Z}`)).map(({ exchange, priority }) => ({ exchange, priority })),
      [{ exchange: `mx.${Z}`, priority: 10 }],
    );
    assert.deepEqual(
      (await resolver.resolveSrv(`_sip._tcp.${Z}`)).map(({ name, port, priority, weight }) => ({ name, port, priority, weight })),
      [{ name: `sip.${Z}`, port: 5060, priority: 1, weight: 2 }],
    );
    assert.deepEqual(await resolver.resolveNs(Z), ["ns1.edge-platform.test", "ns2.edge-platform.test"]);
    await assert.rejects(resolver.resolve4(`missing.${Z}`), { code: "ENOTFOUND" });
    await assert.rejects(resolver.resolveMx(`www.${Z}`), { code: "ENODATA" });
    await assert.rejects(resolver.resolve4("www.not-ours.example"), { code: "EREFUSED" });
  });

  it("tells NXDOMAIN from NODATA with the SOA and the negative TTL of RFC 2308", async () => {
    const nx = await udpQuery(port, `missing.${Z}`, "A");
    assert.equal(rcodeOf(nx), 3);
    assert.ok((nx.flags ?? 0) & AA, "authoritative");
    assert.equal(nx.authorities?.[0].type, "SOA");
    assert.equal(nx.authorities?.[0].ttl, 1800, "min(SOA TTL 3600, minimum 1800)");
    const nodata = await udpQuery(port, `www.${Z}`, "TXT");
    assert.equal(rcodeOf(nodata), 0);
    assert.deepEqual(nodata.answers, []);
    assert.equal(nodata.authorities?.[0].type, "SOA");
    const ent = await udpQuery(port, `b.ent.${Z}`, "A");
    assert.equal(rcodeOf(ent), 0, "an empty non-terminal exists");
    assert.equal(rcodeOf(await udpQuery(port, `c.ent.${Z}`, "A")), 3);
    const explicit = await udpQuery(port, `exists.wild.${Z}`, "A");
    assert.equal(rcodeOf(explicit), 0, "a name that exists is not covered by the wildcard");
    assert.deepEqual(explicit.answers, []);
    const dangling = await udpQuery(port, `dangling.${Z}`, "A");
    assert.equal(rcodeOf(dangling), 3, "a CNAME to a missing name in our zone ends in NXDOMAIN");
    assert.deepEqual(data(dangling, "CNAME"), [`nowhere.${Z}`]);
    const chain = await udpQuery(port, `chain.${Z}`, "A");
    assert.deepEqual(
      chain.answers?.map((a) => a.type),
      ["CNAME", "CNAME", "A", "A"],
    );
  });

  it("refers below a delegation with glue instead of answering", async () => {
    const r = await udpQuery(port, `host.sub.${Z}`, "A");
    assert.equal(rcodeOf(r), 0);
    assert.equal((r.flags ?? 0) & AA, 0, "a referral is not authoritative");
    assert.deepEqual(r.answers, []);
    assert.deepEqual(
      r.authorities?.map((a: any) => [a.type, a.data]),
      [["NS", `ns1.sub.${Z}`]],
    );
    assert.deepEqual(
      r.additionals?.map((a: any) => [a.name, a.data]),
      [[`ns1.sub.${Z}`, "203.0.113.53"]],
    );
    const ds = await udpQuery(port, `sub.${Z}`, "DS");
    assert.ok((ds.flags ?? 0) & AA, "DS at the cut is answered by the parent");
    assert.equal(ds.answers?.length, 1);
  });

  it("synthesizes HTTPS for proxied names and serves SOA and NS at the apex", async () => {
    // dns-packet has no name for type 65, so it is asked as UNKNOWN_65.
    const h = await udpQuery(port, `shop.${Z}`, "UNKNOWN_65");
    assert.equal(h.answers?.length, 1);
    assert.equal(h.answers?.[0].type, "UNKNOWN_65" as never);
    assert.equal((h.answers?.[0] as { ttl?: number }).ttl, 300);
    const soa = await udpQuery(port, Z, "SOA");
    const s = (soa.answers?.[0] as any).data;
    assert.equal(s.mname, "ns1.edge-platform.test");
    assert.deepEqual([s.refresh, s.retry, s.expire, s.minimum], [10000, 2400, 604800, 1800]);
  });

  it("sets TC over UDP when the answer does not fit, and answers in full with EDNS0 or over TCP", async () => {
    const plain = await udpQuery(port, `big.${Z}`, "A");
    assert.ok((plain.flags ?? 0) & TC, "truncated at 512 bytes");
    assert.deepEqual(plain.answers, []);
    const edns = await udpQuery(port, `big.${Z}`, "A", { edns: 4096 });
    assert.equal((edns.flags ?? 0) & TC, 0);
    assert.equal(edns.answers?.length, 60);
    assert.ok(
      edns.additionals?.some((a) => a.type === "OPT"),
      "EDNS answered with OPT",
    );
    const [tcp] = await tcpQuery(port, encodeQuery(`big.${Z}`, "A"));
    assert.equal(tcp.answers?.length, 60);
    assert.deepEqual(await resolver.resolve4(`big.${Z}`).then((a) => a.length), 60, "the resolver retries over TCP");
  });

  it("answers a record right after the API call returns, and forgets it right after delete", async () => {
    for (let i = 0; i < 5; i++) {
      const rec = await createRecord(p, zoneId, { type: "A", name: `fresh${i}`, content: `203.0.113.${200 + i}` });
      assert.deepEqual(data(await udpQuery(port, `fresh${i}.${Z}`, "A")), [`203.0.113.${200 + i}`]);
      await p.api("DELETE", `/zones/${zoneId}/dns_records/${rec.id}`);
      assert.equal(rcodeOf(await udpQuery(port, `fresh${i}.${Z}`, "A")), 3);
    }
    // A cached answer is not served after a change either.
    const r = await createRecord(p, zoneId, { type: "TXT", name: "cached", content: "one" });
    assert.deepEqual(
      data(await udpQuery(port, `cached.${Z}`, "TXT")).map((d: any) => String(d)),
      ["one"],
    );
    await p.api("PATCH", `/zones/${zoneId}/dns_records/${r.id}`, { content: "two" });
    assert.deepEqual(
      data(await udpQuery(port, `cached.${Z}`, "TXT")).map((d: any) => String(d)),
      ["two"],
    );
  });

  it("survives malformed packets: FORMERR or silence, and keeps answering", async () => {
    const q = encodeQuery(`www.${Z}`, "A", { id: 4242 });
    const truncated = await udpRaw(port, q.subarray(0, q.length - 3));
    assert.equal(truncated.readUInt16BE(0), 4242);
    assert.equal(truncated.readUInt16BE(2) & 0xf, 1, "FORMERR");
    const garbage = Buffer.alloc(40, 0xff);
    garbage.writeUInt16BE(0x0100, 2);
    assert.equal((await udpRaw(port, garbage)).readUInt16BE(2) & 0xf, 1);
    await assert.rejects(udpRaw(port, Buffer.from([1, 2, 3]), 300), /no UDP reply/, "too short to answer");
    const response = Buffer.from(q);
    response.writeUInt16BE(0x8000, 2);
    await assert.rejects(udpRaw(port, response, 300), /no UDP reply/, "responses are never answered");
    const update = Buffer.from(q);
    update.writeUInt16BE(5 << 11, 2);
    assert.equal((await udpRaw(port, update)).readUInt16BE(2) & 0xf, 4, "UPDATE is NOTIMP");
    const two = packet.encode({
      type: "query",
      id: 1,
      questions: [
        { type: "A", name: `www.${Z}` },
        { type: "A", name: `www.${Z}` },
      ],
    });
    assert.equal((await udpRaw(port, two)).readUInt16BE(2) & 0xf, 1);
    // Sixty questions, each but the first a 2-byte pointer to the first name: an error answer repeating them
    // all would be four times the query (a reflection amplifier). Error answers repeat a question only when there is one.
    const many = Buffer.from(encodeQuery(`www.${Z}`, "A", { id: 77 }));
    many.writeUInt16BE(2 << 11, 2); // opcode STATUS: NOTIMP
    many.writeUInt16BE(60, 4);
    const amplifying = Buffer.concat([many, ...Array.from({ length: 59 }, () => Buffer.from([0xc0, 12, 0, 1, 0, 1]))]);
    assert.equal(packet.decode(amplifying).questions?.length, 60);
    const notimp = await udpRaw(port, amplifying);
    assert.equal(notimp.readUInt16BE(2) & 0xf, 4, "NOTIMP");
    assert.ok(notimp.length <= amplifying.length, `${notimp.length} bytes answered to ${amplifying.length}`);
    const [tcpBad] = await tcpQuery(port, Buffer.alloc(20, 0x11));
    assert.equal(rcodeOf(tcpBad), 1, "FORMERR over TCP too");
    // Fuzz: thousands of mutated queries (random bytes flipped, cut, extended), then it must still answer.
    const sock = dgram.createSocket("udp4");
    let seed = 12345;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    const base = [encodeQuery(`www.${Z}`, "A", { edns: 1232 }), encodeQuery(`_sip._tcp.${Z}`, "SRV"), encodeQuery(Z, "AXFR")];
    for (let i = 0; i < 3000; i++) {
      const m = Buffer.from(base[i % base.length]);
      for (let k = rnd(4) + 1; k > 0; k--) m[rnd(m.length)] = rnd(256);
      const cut = rnd(3) === 0 ? m.subarray(0, rnd(m.length)) : rnd(3) === 0 ? Buffer.concat([m, Buffer.alloc(rnd(40), rnd(256))]) : m;
      sock.send(cut, port, "127.0.0.1");
      if (i % 200 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 200));
    sock.close();
    assert.equal(p.process.exitCode, null, "the server process is alive");
    assert.deepEqual(data(await udpQuery(port, `www.${Z}`, "A")).sort(), ["203.0.113.1", "203.0.113.2"], "still answering");
  });

  it("answers every valid query interleaved with a flood of garbage datagrams (UDP in the main process)", async () => {
    const queries = Array.from({ length: 100 }, (_, i) => (i % 2 ? encodeQuery(`www.${Z}`, "A") : encodeQuery(`flood-${i}.${Z}`, "A")));
    const { replies, garbageReplies } = await garbageFlood(port, 5000, queries);
    // One not answered during the flood is asked again, as a resolver would; it must then be answered.
    const answers = await Promise.all(queries.map((q, i) => replies[i] ?? udpAsk(port, q)));
    for (const [i, reply] of answers.entries()) {
      const r = packet.decode(reply);
      if (i % 2) assert.deepEqual(data(r).sort(), ["203.0.113.1", "203.0.113.2"], `query ${i}`);
      else assert.equal(rcodeOf(r), 3, `query ${i}`);
    }
    assert.ok(garbageReplies > 0, "the garbage got FORMERR");
  });

  it("transfers the zone (AXFR) to allowed secondaries only, with proxied names as edge addresses", async () => {
    const isEnd = (msgs: DnsResponse[]) =>
      msgs.flatMap((m) => m.answers ?? []).filter((a) => a.type === "SOA").length >= 2 || msgs.some((m) => rcodeOf(m) !== 0);
    const refused = await tcpQuery(port, encodeQuery(Z, "AXFR"), isEnd);
    assert.equal(rcodeOf(refused[0]), 5, "127.0.0.1 is not on the allow list");
    const msgs = await tcpQuery(port, encodeQuery(Z, "AXFR"), isEnd, "127.0.0.2");
    const all = msgs.flatMap((m) => m.answers ?? []);
    assert.equal(all[0].type, "SOA");
    assert.equal(all[all.length - 1].type, "SOA");
    assert.ok(all.some((a: any) => a.name === `www.${Z}` && a.type === "A" && a.data === "203.0.113.1"));
    const shop = all.filter((a) => a.name === `shop.${Z}`).map((a: any) => a.data);
    assert.deepEqual(shop.sort(), ["192.0.2.10", "192.0.2.11", "2001:db8::10", "2001:db8::11"], "never the origin 203.0.113.7");
    const flat = (await tcpQuery(port, encodeQuery("flat.example", "AXFR"), isEnd, "127.0.0.2")).flatMap((m) => m.answers ?? []);
    assert.ok(!flat.some((a) => a.type === "CNAME"), "the apex CNAME goes out flattened");
    assert.deepEqual(
      flat
        .filter((a) => a.type === "A")
        .map((a: any) => a.data)
        .sort(),
      ["203.0.113.1", "203.0.113.2"],
    );
    assert.equal(all.filter((a) => a.name === `big.${Z}`).length, 60);
    assert.equal(rcodeOf(await udpQuery(port, Z, "AXFR")), 5, "no AXFR over UDP");
  });

  it("sends NOTIFY to the secondary when the serial changes", async () => {
    notifies.length = 0;
    await createRecord(p, zoneId, { type: "TXT", name: "notify-me", content: "x" });
    const deadline = Date.now() + 5000;
    while (notifies.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const n = notifies[0]?.q;
    assert.ok(n, "a NOTIFY arrived");
    assert.equal(((n.flags ?? 0) >> 11) & 0xf, 4, "opcode NOTIFY");
    assert.deepEqual(
      n.questions?.map((q) => [q.name, q.type]),
      [[Z, "SOA"]],
    );
    const soa = await udpQuery(port, Z, "SOA");
    assert.equal((n.answers?.[0] as any).data.serial, (soa.answers?.[0] as any).data.serial);
    while (!p.logs().includes("secondary acknowledged NOTIFY") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.match(p.logs(), /secondary acknowledged NOTIFY/);
  });

  it("takes a NOTIFY as acknowledged only when the secondary it was sent to answers", async () => {
    silent = true;
    const forger = dgram.createSocket("udp4");
    try {
      await new Promise<void>((r) => forger.bind(0, "127.0.0.3", r));
      await createRecord(p, zoneId, { type: "TXT", name: "notify-forged", content: "x" });
      const serial = ((await udpQuery(port, Z, "SOA")).answers![0] as any).data.serial as number;
      // Earlier changes may still be notified meanwhile: only this zone's NOTIFYs of this serial count.
      const ofThisChange = () => notifies.filter((n) => n.q.questions?.[0]?.name === Z && (n.q.answers?.[0] as any)?.data?.serial === serial);
      const acknowledged = () =>
        p
          .logs()
          .split("\n")
          .some((l) => l.includes("secondary acknowledged NOTIFY") && l.includes(`"zone":"${Z}"`) && l.includes(`"serial":${serial}`));
      const until = Date.now() + 15_000;
      while (ofThisChange().length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      const { q, from } = ofThisChange()[0];
      // Right id, right flags, wrong sender: the platform must keep waiting and send the NOTIFY again.
      forger.send(acknowledgement(q), from.port, from.address);
      while (ofThisChange().length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.ok(ofThisChange().length >= 2, "sent again: the forged acknowledgement did not count");
      assert.equal(acknowledged(), false);
      const again = ofThisChange()[1];
      secondary.send(acknowledgement(again.q), again.from.port, again.from.address);
      while (!acknowledged() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.ok(acknowledged(), "the secondary's own acknowledgement counts");
    } finally {
      silent = false;
      forger.close();
    }
  });

  it("gives the answers dig expects for every stored type", async (t) => {
    if (!(await digAvailable)) {
      if (process.env.CI) assert.fail("dig is required under CI (apt-get install dnsutils)");
      return t.skip("dig not installed (apt-get install dnsutils); these cases run under CI");
    }
    const short = async (name: string, type: string) => (await dig(port, ["+short", name, type])).trim().split("\n").sort().join("\n");
    // dig breaks long hex and base64 fields into groups; compare those without the spaces.
    const compact = async (name: string, type: string) => (await short(name, type)).replace(/\s+/g, "");
    assert.equal(await short(`www.${Z}`, "A"), "203.0.113.1\n203.0.113.2");
    assert.equal(await short(`mail.${Z}`, "CAA"), '0 issue "ca.example"');
    assert.equal(await short(`mail.${Z}`, "MX"), `10 mx.${Z}.`);
    assert.equal(await short(`_sip._tcp.${Z}`, "SRV"), `1 2 5060 sip.${Z}.`);
    assert.equal(await short(`ptr.${Z}`, "PTR"), `www.${Z}.`);
    assert.equal(await short(`enum.${Z}`, "NAPTR"), '100 10 "u" "E2U+sip" "!^.*$!sip:x@resolve.example!" .');
    assert.equal(await compact(`host.${Z}`, "SSHFP"), `42${"AB".repeat(32)}`);
    assert.equal(await compact(`_443._tcp.${Z}`, "TLSA"), `311${"CD".repeat(32)}`);
    assert.equal(await compact(`smime.${Z}`, "SMIMEA"), `301${"EF".repeat(32)}`);
    assert.equal(await compact(`sub.${Z}`, "DS"), `12345132${"01".repeat(32)}`);
    assert.equal(await short(Z, "DNSKEY"), "257 3 13 AQID");
    assert.equal(await short(`_http._tcp.${Z}`, "URI"), '10 1 "https://www.resolve.example/"');
    assert.equal(await short(`_dns.${Z}`, "SVCB"), `1 dns.${Z}. alpn="dot" port=853`);
    assert.equal(await short(`svc.${Z}`, "HTTPS"), '1 . alpn="h3,h2" ipv4hint=203.0.113.1');
    assert.equal(await short(`cert.${Z}`, "CERT"), "PKIX 0 0 AAEC");
    assert.equal(await short(`shop.${Z}`, "HTTPS"), '1 . alpn="h3,h2" ipv4hint=192.0.2.10,192.0.2.11 ipv6hint=2001:db8::10,2001:db8::11');
    const full = await dig(port, [`www.${Z}`, "A", "+norec"]);
    assert.match(full, /flags: qr aa/);
    const nx = await dig(port, [`missing.${Z}`, "A"]);
    assert.match(nx, /status: NXDOMAIN/);
    assert.match(nx, /AUTHORITY SECTION:\n\S+\s+1800\s+IN\s+SOA/);
    const tcp = await dig(port, ["+tcp", `big.${Z}`, "A"]);
    assert.match(tcp, /ANSWER: 60,/);
    const axfr = await dig(port, ["-b", "127.0.0.2", Z, "AXFR"]);
    assert.match(axfr, /XFR size: \d+ records/);
    assert.match(await dig(port, [Z, "AXFR"]), /Transfer failed/);
  });
});
