import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createZone, startDnsPlatform } from "../testing/helpers.js";

/** The error a request must fail with: top-level code, and the chained code when the hosted API wraps it in 1004. */
type Expect = { code: number; chain?: number; message?: RegExp };

describe("DNS API validation: every rule refuses with its code and writes nothing", () => {
  let p: TestPlatform;
  let zoneId: string;
  const records = async () => (await p.api("GET", `/zones/${zoneId}/dns_records?per_page=1000`)).body.result as any[];

  before(async () => {
    ({ p } = await startDnsPlatform(["--platform-ranges", "198.51.100.0/24"]));
    zoneId = await createZone(p, "valid.example");
  });
  after(() => p?.dispose());

  async function refused(body: Record<string, unknown>, want: Expect) {
    const count = (await records()).length;
    const r = await p.api("POST", `/zones/${zoneId}/dns_records`, body);
    assert.equal(r.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
    assert.equal(r.body.success, false);
    const err = r.body.errors[0];
    assert.equal(err.code, want.code, JSON.stringify(r.body));
    if (want.chain !== undefined) assert.equal(err.error_chain?.[0]?.code, want.chain, JSON.stringify(r.body));
    if (want.message) assert.match(err.error_chain?.[0]?.message ?? err.message, want.message);
    assert.equal((await records()).length, count, "nothing was written");
  }

  it("accepts the spec's section 4.2 bodies with X-Auth-Email/X-Auth-Key and answers the section 2.2 record", async () => {
    const headers = { "x-auth-email": p.email, "x-auth-key": p.apiKey, "content-type": "application/json" };
    const bodies = [
      { type: "A", name: "spec-a", content: "203.0.113.50", ttl: 3600, proxied: false },
      { type: "AAAA", name: "spec-aaaa", content: "2001:db8::50", ttl: 1, proxied: true },
      { type: "CNAME", name: "spec-cname", content: "spec-a.valid.example", ttl: 1, proxied: true },
      { type: "SRV", name: "_xmpp._tcp", data: { priority: 5, weight: 10, port: 5222, target: "spec-a.valid.example" } },
    ];
    for (const body of bodies) {
      const res = await request(`${p.apiUrl}/zones/${zoneId}/dns_records`, { method: "POST", headers, body: JSON.stringify(body) });
      const env = (await res.body.json()) as any;
      assert.equal(res.statusCode, 200, JSON.stringify(env));
      assert.deepEqual(env.errors, []);
      assert.deepEqual(env.messages, []);
      assert.equal(env.success, true);
      const r = env.result;
      const keys = [
        "id",
        "zone_id",
        "zone_name",
        "name",
        "type",
        "content",
        "proxiable",
        "proxied",
        "ttl",
        "locked",
        "meta",
        "comment",
        "tags",
        "created_on",
        "modified_on",
      ];
      for (const k of keys) assert.ok(k in r, `${body.type} record has ${k}`);
      assert.equal(r.comment, null);
      assert.deepEqual(r.tags, []);
      if (body.type === "SRV") {
        assert.equal(r.content, "10 5222 spec-a.valid.example");
        assert.equal(r.priority, 5);
        assert.deepEqual(r.data, body.data);
        assert.equal(r.proxiable, false);
      } else {
        assert.equal(r.proxiable, true);
        assert.equal(r.ttl, body.proxied ? 1 : body.ttl);
      }
    }
  });

  it("applies the name rules of A, AAAA and CNAME", async () => {
    await refused({ type: "A", name: "a".repeat(64), content: "203.0.113.1" }, { code: 9000, message: /63/ });
    await refused({ type: "A", name: "1abc", content: "203.0.113.1" }, { code: 9000 });
    await refused({ type: "A", name: "abc-", content: "203.0.113.1" }, { code: 9000 });
    await refused({ type: "AAAA", name: "a$b", content: "2001:db8::1" }, { code: 9000 });
    await refused({ type: "CNAME", name: "x.*", content: "valid.example" }, { code: 9000 });
    await refused({ type: "A", name: "www.other.org.", content: "203.0.113.1" }, { code: 9000, message: /not in the zone/ });
    await refused({ type: "A", name: "", content: "203.0.113.1" }, { code: 9000 });
    for (const name of ["@", "*.wild", "_under", "a-b.c", "a".repeat(63)]) {
      const r = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name, content: "203.0.113.2" });
      assert.equal(r.status, 200, `${name}: ${JSON.stringify(r.body)}`);
    }
  });

  it("checks addresses and host names in content, and refuses the platform's own addresses", async () => {
    await refused({ type: "A", name: "c1", content: "300.1.1.1" }, { code: 9005, message: /valid IPv4/ });
    await refused({ type: "A", name: "c1", content: "2001:db8::1" }, { code: 9005 });
    await refused({ type: "AAAA", name: "c1", content: "203.0.113.1" }, { code: 9006, message: /valid IPv6/ });
    await refused({ type: "CNAME", name: "c1", content: "not a host" }, { code: 1004, chain: 9007, message: /CNAME record is invalid/ });
    await refused({ type: "CNAME", name: "c1", content: "c1.valid.example" }, { code: 1004, chain: 9007 });
    await refused({ type: "A", name: "c1", content: "192.0.2.10" }, { code: 9003, message: /belongs to the platform/ });
    await refused({ type: "AAAA", name: "c1", content: "2001:db8::11" }, { code: 9003 });
    await refused({ type: "A", name: "c1", content: "198.51.100.7" }, { code: 9003 });
  });

  it("allows TTL 1 or 60-86400, forces automatic TTL on proxied records, and proxies only A, AAAA and CNAME", async () => {
    await refused({ type: "A", name: "t1", content: "203.0.113.3", ttl: 30 }, { code: 1004, chain: 9021, message: /between 60 and 86400/ });
    await refused({ type: "A", name: "t1", content: "203.0.113.3", ttl: 86401 }, { code: 1004, chain: 9021 });
    await refused({ type: "A", name: "t1", content: "203.0.113.3", ttl: 61.5 }, { code: 1004, chain: 9021 });
    await refused({ type: "MX", name: "t1", content: "mail.valid.example", priority: 1, proxied: true }, { code: 9041 });
    await refused({ type: "TXT", name: "t1", content: "x", proxied: true }, { code: 9041 });
    const r = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "t1", content: "203.0.113.3", ttl: 3600, proxied: true });
    assert.equal(r.body.result.ttl, 1);
  });

  it("requires consistent TXT quotes and keeps unquoted content as written (its wire form is one string)", async () => {
    await refused({ type: "TXT", name: "q", content: '"abc' }, { code: 1004, chain: 9009, message: /quotation marks/ });
    await refused({ type: "TXT", name: "q", content: 'abc"' }, { code: 1004, chain: 9009 });
    await refused({ type: "TXT", name: "q", content: '"a" b' }, { code: 1004, chain: 9009 });
    const r = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: "q", content: "v=DMARC1; p=none" });
    assert.equal(r.body.result.content, "v=DMARC1; p=none");
    const two = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: "q", content: '"part one" "part two"' });
    assert.equal(two.body.result.content, '"part one" "part two"');
  });

  it("keeps CNAME alone on its name and refuses identical records", async () => {
    await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "dup", content: "203.0.113.4" });
    await refused({ type: "CNAME", name: "dup", content: "valid.example" }, { code: 81053, message: /already exists/ });
    await refused({ type: "A", name: "dup", content: "203.0.113.4" }, { code: 81058, message: /identical/ });
    await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "CNAME", name: "cn", content: "dup.valid.example" });
    await refused({ type: "TXT", name: "cn", content: "x" }, { code: 81054, message: /CNAME record with that host/ });
    await refused({ type: "CNAME", name: "cn", content: "other.valid.example" }, { code: 81053 });
  });

  it("keeps a delegation (NS below the apex) alone on its name, DS aside", async () => {
    const ns = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "NS", name: "child", content: "ns1.elsewhere.example" });
    assert.equal(ns.status, 200, JSON.stringify(ns.body));
    const second = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "NS", name: "child", content: "ns2.elsewhere.example" });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    const ds = await p.api("POST", `/zones/${zoneId}/dns_records`, {
      type: "DS",
      name: "child",
      data: { key_tag: 2371, algorithm: 13, digest_type: 2, digest: "1F987CC6583E92DF0890718C42B8D1B6D4C0B6A4B5E3E5C4B8C4D4B7D0E9A6F1" },
    });
    assert.equal(ds.status, 200, JSON.stringify(ds.body));
    await refused({ type: "A", name: "child", content: "203.0.113.9" }, { code: 81056, message: /NS records cannot exist on the same name/ });
    await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: "hosted", content: "x" });
    await refused({ type: "NS", name: "hosted", content: "ns1.elsewhere.example" }, { code: 81056 });
    const apex = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "NS", name: "@", content: "ns3.elsewhere.example" });
    assert.equal(apex.status, 200, "NS at the apex sits beside the zone's other records");
  });

  it("requires a proxied CNAME chain that ends inside our zones to end at an address", async () => {
    await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "TXT", name: "noaddr", content: "x" });
    await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "CNAME", name: "hop", content: "noaddr.valid.example" });
    await refused({ type: "CNAME", name: "px", content: "hop.valid.example", proxied: true }, { code: 1004, chain: 9039, message: /noaddr\.valid\.example/ });
    const ok1 = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "CNAME", name: "px", content: "cn.valid.example", proxied: true });
    assert.equal(ok1.status, 200, JSON.stringify(ok1.body));
    const ext = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "CNAME", name: "px2", content: "origin.example.net", proxied: true });
    assert.equal(ext.status, 200, "a target outside our zones is the origin's business");
  });

  it("checks the data of each structured type", async () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ type: "SRV", name: "_s._tcp", data: { priority: 1, weight: 1, port: 70000, target: "x.valid.example" } }, /port/],
      [{ type: "SRV", name: "_s._tcp", data: { priority: -1, weight: 1, port: 1, target: "x.valid.example" } }, /priority/],
      [{ type: "SRV", name: "_s._tcp", data: { priority: 1, weight: 1, port: 1, target: "bad host" } }, /target/],
      [{ type: "MX", name: "m", content: "mail.valid.example" }, /priority/],
      [{ type: "CAA", name: "caa", data: { flags: 0, tag: "bogus", value: "x" } }, /tag/],
      [{ type: "CAA", name: "caa", data: { flags: 256, tag: "issue", value: "x" } }, /flags/],
      [{ type: "DS", name: "ds", data: { key_tag: 1, algorithm: 13, digest_type: 2, digest: "ab".repeat(20) } }, /32 bytes/],
      [{ type: "DS", name: "ds", data: { key_tag: 1, algorithm: 13, digest_type: 3, digest: "ab".repeat(32) } }, /digest_type/],
      [{ type: "DNSKEY", name: "k", data: { flags: 257, protocol: 2, algorithm: 13, public_key: "AAAA" } }, /protocol/],
      [{ type: "DNSKEY", name: "k", data: { flags: 257, protocol: 3, algorithm: 13, public_key: "not base64!" } }, /base64/],
      [{ type: "SSHFP", name: "h", data: { algorithm: 4, type: 2, fingerprint: "zz" } }, /hexadecimal/],
      [{ type: "TLSA", name: "_443._tcp", data: { usage: 4, selector: 1, matching_type: 1, certificate: "ab".repeat(32) } }, /usage/],
      [{ type: "SMIMEA", name: "s", data: { usage: 3, selector: 2, matching_type: 1, certificate: "ab".repeat(32) } }, /selector/],
      [{ type: "HTTPS", name: "h", data: { priority: 1, target: ".", value: "alpn" } }, /alpn/],
      [{ type: "SVCB", name: "h", data: { priority: 1, target: ".", value: "ipv4hint=2001:db8::1" } }, /ipv4hint/],
      [{ type: "NAPTR", name: "n", data: { order: 1, preference: 1, flags: "a-b", service: "E2U+sip", regex: "", replacement: "." } }, /flags/],
      [{ type: "URI", name: "_ftp._tcp", data: { weight: 1, target: "ftp://x" } }, /priority/],
      [{ type: "CERT", name: "c", data: { type: 1, key_tag: 1, algorithm: 8, certificate: "###" } }, /base64/],
      [{ type: "PTR", name: "p", content: "not a name!" }, /host name/],
      [{ type: "NS", name: "sub", content: "" }, /host name/],
    ];
    for (const [body, why] of bad) await refused(body, { code: 1004, chain: 9009, message: why });
    await refused({ type: "LOC", name: "x", content: "x" }, { code: 1004, chain: 9011 });
  });

  it("accepts valid data of each structured type and answers content in presentation form", async () => {
    const good: [Record<string, unknown>, string][] = [
      [{ type: "URI", name: "_ftp._tcp", priority: 10, data: { weight: 1, target: "ftp://files.valid.example/" } }, '1 "ftp://files.valid.example/"'],
      [{ type: "DS", name: "child", data: { key_tag: 2371, algorithm: 13, digest_type: 2, digest: "AB".repeat(32) } }, `2371 13 2 ${"ab".repeat(32)}`],
      [{ type: "SSHFP", name: "host", data: { algorithm: 4, type: 2, fingerprint: "cd".repeat(32) } }, `4 2 ${"cd".repeat(32)}`],
      [{ type: "TLSA", name: "_443._tcp", data: { usage: 3, selector: 1, matching_type: 1, certificate: "ef".repeat(32) } }, `3 1 1 ${"ef".repeat(32)}`],
      [
        {
          type: "NAPTR",
          name: "enum",
          data: { order: 100, preference: 10, flags: "u", service: "E2U+sip", regex: "!^.*$!sip:info@valid.example!", replacement: "." },
        },
        '100 10 "u" "E2U+sip" "!^.*$!sip:info@valid.example!" .',
      ],
      [
        {
          type: "DNSKEY",
          name: "@",
          data: {
            flags: 257,
            protocol: 3,
            algorithm: 13,
            public_key: "mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==",
          },
        },
        "257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==",
      ],
      [{ type: "CERT", name: "cert", data: { type: 1, key_tag: 0, algorithm: 0, certificate: "AAEC" } }, "1 0 0 AAEC"],
      [{ type: "SVCB", name: "_dns", data: { priority: 1, target: "dns.valid.example", value: "alpn=dot port=853" } }, "1 dns.valid.example alpn=dot port=853"],
      [{ type: "SMIMEA", name: "smime", data: { usage: 3, selector: 0, matching_type: 0, certificate: "0102" } }, "3 0 0 0102"],
      [{ type: "PTR", name: "1.ptr", content: "host.valid.example" }, "host.valid.example"],
      [{ type: "NS", name: "delegated", content: "ns1.elsewhere.net" }, "ns1.elsewhere.net"],
    ];
    for (const [body, content] of good) {
      const r = await p.api("POST", `/zones/${zoneId}/dns_records`, { ttl: 1, ...body });
      assert.equal(r.status, 200, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
      assert.equal(r.body.result.content, content);
    }
  });

  it("takes null as not given (lexicon sends data: null) and clears a comment patched to null", async () => {
    const r = await p.api("POST", `/zones/${zoneId}/dns_records`, {
      type: "A",
      name: "nulls",
      content: "203.0.113.60",
      data: null,
      proxied: null,
      ttl: null,
      comment: "x",
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.result.ttl, 1);
    const cleared = await p.api("PATCH", `/zones/${zoneId}/dns_records/${r.body.result.id}`, { comment: null });
    assert.equal(cleared.body.result.comment, null);
    assert.equal(cleared.body.result.content, "203.0.113.60");
  });

  it("answers unknown records 81044 and refuses writes without dns_edit with 403", async () => {
    const miss = await p.api("PATCH", `/zones/${zoneId}/dns_records/${"f".repeat(32)}`, { content: "203.0.113.9" });
    assert.equal(miss.status, 404);
    assert.equal(miss.body.errors[0].code, 81044);
    const tok = await p.api("POST", "/user/tokens", { name: "read-only dns", permissions: ["dns_read"] });
    assert.equal(tok.status, 200, JSON.stringify(tok.body));
    const ro = { authorization: `Bearer ${tok.body.result.value}` };
    assert.equal((await p.api("GET", `/zones/${zoneId}/dns_records`, undefined, ro)).status, 200);
    const w = await p.api("POST", `/zones/${zoneId}/dns_records`, { type: "A", name: "ro", content: "203.0.113.9" }, ro);
    assert.equal(w.status, 403);
    assert.equal(w.body.errors[0].code, 10000);
    const kvTok = await p.api("POST", "/user/tokens", { name: "kv only", permissions: ["kv_read"] });
    const other = await p.api("GET", `/zones/${zoneId}`, undefined, { authorization: `Bearer ${kvTok.body.result.value}` });
    assert.equal(other.status, 404, "a zone the caller cannot see is answered like a missing one");
    assert.equal(other.body.errors[0].code, 1001);
  });

  it("enforces the SOA table, converts RNAME from an e-mail address, and applies account defaults to new zones", async () => {
    const soaFails = async (soa: Record<string, unknown>, why: RegExp) => {
      const r = await p.api("PATCH", `/zones/${zoneId}/dns_settings`, { soa });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.errors[0].code, 9050);
      assert.match(r.body.errors[0].message, why);
    };
    await soaFails({ refresh: 599 }, /refresh/);
    await soaFails({ refresh: 86401 }, /refresh/);
    await soaFails({ retry: 3601 }, /retry/);
    await soaFails({ expire: 86399 }, /expire/);
    await soaFails({ expire: 2419201 }, /expire/);
    await soaFails({ ttl: 1799 }, /ttl/);
    await soaFails({ ttl: 3601 }, /ttl/);
    await soaFails({ min_ttl: 59 }, /min_ttl/);
    await soaFails({ min_ttl: 86401 }, /min_ttl/);
    await soaFails({ refresh: 600, retry: 700 }, /must not exceed soa\.refresh/);
    await soaFails({ rname: "not an address" }, /rname/);
    const unchanged = await p.api("GET", `/zones/${zoneId}/dns_settings`);
    assert.equal(unchanged.body.result.soa.refresh, 10000, "nothing written");

    const ok1 = await p.api("PATCH", `/zones/${zoneId}/dns_settings`, { soa: { rname: "hostmaster@valid.example" } });
    assert.equal(ok1.body.result.soa.rname, "hostmaster.valid.example");
    const ok2 = await p.api("PATCH", `/zones/${zoneId}/dns_settings`, { soa: { rname: "jane.doe@valid.example" } });
    assert.equal(ok2.body.result.soa.rname, "jane\\.doe.valid.example");

    // The hosted settings this server does not have: the value GET reports is accepted, any other refused naming the field.
    const current = (await p.api("GET", `/zones/${zoneId}/dns_settings`)).body.result;
    const roundTrip = await p.api("PATCH", `/zones/${zoneId}/dns_settings`, current);
    assert.equal(roundTrip.status, 200, JSON.stringify(roundTrip.body));
    const turnedOn: [string, unknown][] = [
      ["foundation_dns", true],
      ["multi_provider", true],
      ["secondary_overrides", true],
      ["zone_mode", "dns_only"],
      ["nameservers", { type: "custom.account" }],
      ["internal_dns", { reference_zone_id: "0".repeat(32) }],
    ];
    for (const [field, value] of turnedOn) {
      const r = await p.api("PATCH", `/zones/${zoneId}/dns_settings`, { [field]: value });
      assert.equal(r.status, 400, `${field}: ${JSON.stringify(value)}`);
      assert.match(r.body.errors[0].message, new RegExp(`^${field}: .*not supported here; only .* is accepted`));
      assert.equal(r.body.errors[0].source?.pointer, `/${field}`);
    }

    const acc = await p.api("PATCH", `/accounts/${p.accountId}/dns_settings`, { zone_defaults: { soa: { refresh: 20000, expire: 1209600 }, ns_ttl: 3600 } });
    assert.equal(acc.status, 200, JSON.stringify(acc.body));
    assert.equal(acc.body.result.zone_defaults.soa.refresh, 20000);
    const bad = await p.api("PATCH", `/accounts/${p.accountId}/dns_settings`, { zone_defaults: { soa: { retry: 100 } } });
    assert.equal(bad.status, 400);
    const z2 = await createZone(p, "defaults.example");
    const s2 = await p.api("GET", `/zones/${z2}/dns_settings`);
    assert.equal(s2.body.result.soa.refresh, 20000);
    assert.equal(s2.body.result.soa.expire, 1209600);
    assert.equal(s2.body.result.ns_ttl, 3600);
  });

  it("refuses bad zone names and bad list parameters", async () => {
    for (const name of ["com", "bad name.com", "-x.com", ""]) {
      const r = await p.api("POST", "/zones", { name, account: { id: p.accountId } });
      assert.equal(r.status, 400, name);
      assert.equal(r.body.errors[0].code, 1097);
    }
    const bad = await p.api("GET", `/zones/${zoneId}/dns_records?type=BOGUS`);
    assert.equal(bad.status, 400);
    const badOrder = await p.api("GET", `/zones/${zoneId}/dns_records?order=nope`);
    assert.equal(badOrder.status, 400);
    const zones = await p.api("GET", "/zones?per_page=1&page=99");
    assert.deepEqual(zones.body.result, []);
    assert.equal(zones.body.result_info.total_count, 2);
  });
});
