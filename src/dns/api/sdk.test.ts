import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import Cloudflare from "cloudflare";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startDnsPlatform, udpQuery } from "../testing/helpers.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z$/;

describe("DNS API through the official cloudflare SDK", () => {
  let p: TestPlatform;
  let port: number;
  let cf: Cloudflare;
  let zoneId: string;

  before(async () => {
    ({ p, port } = await startDnsPlatform());
    cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    const zone = await cf.zones.create({ account: { id: p.accountId }, name: "sdk-test.com" });
    zoneId = zone.id;
    assert.equal(zone.status, "active");
    assert.deepEqual(zone.name_servers, ["ns1.edge-platform.test", "ns2.edge-platform.test"]);
    assert.match(zone.activated_on ?? "", ISO);
  });
  after(() => p?.dispose());

  it("finds the zone by name, as certificate tools do, and answers an unknown one as missing", async () => {
    const page = await cf.zones.list({ name: "sdk-test.com" });
    assert.deepEqual(
      page.result.map((z) => z.id),
      [zoneId],
    );
    assert.equal((await cf.zones.get({ zone_id: zoneId })).name, "sdk-test.com");
    await assert.rejects(cf.zones.get({ zone_id: "0".repeat(32) }), (e: any) => e.status === 404 && e.errors[0].code === 1001);
    await assert.rejects(cf.zones.create({ account: { id: p.accountId }, name: "sdk-test.com" }), (e: any) => e.status === 400 && e.errors[0].code === 1061);
  });

  it("creates records of each main type with the spec's fields", async () => {
    const a = await cf.dns.records.create({
      zone_id: zoneId,
      type: "A",
      name: "www",
      content: "203.0.113.10",
      ttl: 3600,
      proxied: false,
      comment: "web",
      tags: ["env:prod"],
    });
    assert.equal(a.name, "www.sdk-test.com");
    assert.match(a.id, /^[0-9a-f]{32}$/);
    assert.match(a.created_on, ISO);
    assert.equal(a.ttl, 3600);
    assert.equal(a.proxiable, true);
    assert.equal(a.comment, "web");
    assert.deepEqual(a.tags, ["env:prod"]);
    const raw = a as unknown as Record<string, unknown>;
    assert.equal(raw.zone_id, zoneId);
    assert.equal(raw.zone_name, "sdk-test.com");
    assert.equal(raw.locked, false);
    assert.deepEqual(raw.meta, { auto_added: false, managed_by_apps: false, managed_by_edge_tunnel: false, source: "primary" });

    const aaaa = await cf.dns.records.create({ zone_id: zoneId, type: "AAAA", name: "www.sdk-test.com", content: "2001:db8:1::1", ttl: 1, proxied: true });
    assert.equal(aaaa.proxied, true);
    assert.equal(aaaa.ttl, 1);
    const cname = await cf.dns.records.create({ zone_id: zoneId, type: "CNAME", name: "blog", content: "www.sdk-test.com", ttl: 300 });
    assert.equal(cname.content, "www.sdk-test.com");
    const mx = await cf.dns.records.create({ zone_id: zoneId, type: "MX", name: "@", content: "mail.sdk-test.com", priority: 10, ttl: 1 });
    assert.equal((mx as { priority?: number }).priority, 10);
    const txt = await cf.dns.records.create({ zone_id: zoneId, type: "TXT", name: "_acme-challenge", content: "token-value", ttl: 120 });
    assert.equal(txt.content, "token-value", "TXT content comes back as written, as hosted");
    const srv = await cf.dns.records.create({
      zone_id: zoneId,
      type: "SRV",
      name: "_sip._udp",
      ttl: 1,
      data: { priority: 10, weight: 20, port: 5060, target: "sip.sdk-test.com" },
    });
    assert.equal(srv.content, "20 5060 sip.sdk-test.com");
    assert.equal(srv.proxiable, false);
    assert.equal((srv as { priority?: number }).priority, 10);
    const caa = await cf.dns.records.create({ zone_id: zoneId, type: "CAA", name: "@", ttl: 1, data: { flags: 0, tag: "issue", value: "letsencrypt.org" } });
    assert.equal(caa.content, '0 issue "letsencrypt.org"');

    // Answered by the DNS server right after the API call returned.
    const ans = await udpQuery(port, "_acme-challenge.sdk-test.com", "TXT");
    assert.deepEqual(
      (ans.answers ?? []).map((x: any) => x.data.map(String)),
      [["token-value"]],
    );
  });

  it("lists with filters and paginates the way the SDK iterates", async () => {
    const txt = await cf.dns.records.list({ zone_id: zoneId, type: "TXT", name: { exact: "_acme-challenge.sdk-test.com" }, content: { exact: "token-value" } });
    assert.equal(txt.result.length, 1, "TXT content filter matches without quotes");
    const quoted = await cf.dns.records.list({ zone_id: zoneId, content: { exact: '"token-value"' } });
    assert.equal(quoted.result.length, 1, "and with quotes");
    const contains = await cf.dns.records.list({ zone_id: zoneId, name: { contains: "WWW" } });
    assert.equal(contains.result.length, 2, "case-insensitive contains");
    const tagged = await cf.dns.records.list({ zone_id: zoneId, tag: { exact: "env:prod" } });
    assert.equal(tagged.result.length, 1);
    const anyOf = await cf.dns.records.list({ zone_id: zoneId, match: "any", type: "MX", name: { exact: "blog.sdk-test.com" } });
    assert.deepEqual(anyOf.result.map((r) => r.type).sort(), ["CNAME", "MX"]);
    const proxied = await cf.dns.records.list({ zone_id: zoneId, proxied: true });
    assert.deepEqual(
      proxied.result.map((r) => r.type),
      ["AAAA"],
    );

    const seen: string[] = [];
    for await (const r of cf.dns.records.list({ zone_id: zoneId, per_page: 2 })) seen.push(r.id);
    assert.equal(seen.length, 7);
    assert.equal(new Set(seen).size, 7);
    const last = await p.api("GET", `/zones/${zoneId}/dns_records?per_page=2&page=9`);
    assert.equal(last.status, 200);
    assert.deepEqual(last.body.result, []);
    assert.deepEqual(last.body.result_info, { page: 9, per_page: 2, count: 0, total_count: 7, total_pages: 4 });
    const ordered = await cf.dns.records.list({ zone_id: zoneId, order: "type", direction: "desc" });
    assert.equal(ordered.result[0].type, "TXT");
  });

  it("updates with PUT and PATCH, batches all-or-nothing, and deletes", async () => {
    const [www] = (await cf.dns.records.list({ zone_id: zoneId, type: "A", name: { exact: "www.sdk-test.com" } })).result;
    const patched = await cf.dns.records.edit(www.id, { zone_id: zoneId, type: "A", name: "www.sdk-test.com", content: "203.0.113.11", ttl: 3600 });
    assert.equal(patched.content, "203.0.113.11");
    assert.equal(patched.comment, "web", "PATCH keeps the fields it does not name");
    const put = await cf.dns.records.update(www.id, { zone_id: zoneId, type: "A", name: "www", content: "203.0.113.12", ttl: 120 });
    assert.equal(put.comment, null, "PUT resets what it does not name");
    assert.deepEqual(put.tags, []);
    assert.equal(put.ttl, 120);

    const batch = await cf.dns.records.batch({
      zone_id: zoneId,
      deletes: [{ id: www.id }],
      posts: [
        { type: "A", name: "api", content: "203.0.113.20", ttl: 1 },
        { type: "A", name: "api", content: "203.0.113.21", ttl: 1 },
      ],
    });
    assert.equal(batch.deletes?.length, 1);
    assert.deepEqual(
      batch.posts?.map((r) => r.content),
      ["203.0.113.20", "203.0.113.21"],
    );
    const apiA = await udpQuery(port, "api.sdk-test.com", "A");
    assert.deepEqual((apiA.answers ?? []).map((x: any) => x.data).sort(), ["203.0.113.20", "203.0.113.21"]);

    const before = (await cf.dns.records.list({ zone_id: zoneId, per_page: 100 })).result.length;
    await assert.rejects(
      cf.dns.records.batch({
        zone_id: zoneId,
        posts: [
          { type: "A", name: "ok", content: "203.0.113.30", ttl: 1 },
          { type: "A", name: "bad", content: "not-an-ip", ttl: 1 },
        ],
      }),
      (e: any) => e.status === 400 && e.errors[0].code === 9005,
    );
    assert.equal((await cf.dns.records.list({ zone_id: zoneId, per_page: 100 })).result.length, before, "nothing of a failed batch is written");

    const del = await cf.dns.records.delete(batch.posts![0].id, { zone_id: zoneId });
    assert.equal(del?.id, batch.posts![0].id);
    await assert.rejects(cf.dns.records.get(batch.posts![0].id, { zone_id: zoneId }), (e: any) => e.status === 404 && e.errors[0].code === 81044);
  });

  // SDK 7.3 sends the zone file as a multipart text field named "file".
  it("exports a BIND zone file and imports one", async () => {
    const text = await cf.dns.records.export({ zone_id: zoneId });
    assert.match(text, /^sdk-test\.com\.\t3600\tIN\tSOA\tns1\.edge-platform\.test\. /m);
    assert.match(text, /^_sip\._udp\.sdk-test\.com\.\t300\tIN\tSRV\t10 20 5060 sip\.sdk-test\.com\.$/m);
    assert.match(text, /^www\.sdk-test\.com\.\t300\tIN\tAAAA\t2001:db8:1::1 ; cf_tags=cf-proxied:true$/m);

    const zone2 = await cf.zones.create({ account: { id: p.accountId }, name: "imported.org" });
    const file = text.replaceAll("sdk-test.com", "imported.org") + 'extra 600 IN TXT "v=spf1 -all"\n';
    const res = await cf.dns.records.import({ zone_id: zone2.id, file });
    assert.equal(res.total_records_parsed, res.recs_added);
    const imported = (await cf.dns.records.list({ zone_id: zone2.id, per_page: 100 })).result;
    assert.equal(imported.length, res.recs_added);
    assert.ok(imported.some((r) => r.type === "AAAA" && r.proxied && r.name === "www.imported.org"));
    assert.ok(imported.some((r) => r.type === "TXT" && r.name === "extra.imported.org" && r.ttl === 600));
    const again = await cf.dns.records.import({ zone_id: zone2.id, file });
    assert.equal(again.recs_added, 0, "records already there are skipped");

    await assert.rejects(
      cf.dns.records.import({ zone_id: zone2.id, file: "bad 300 IN A 999.1.1.1\n" }),
      (e: any) => e.status === 400 && /line 1/.test(e.errors[0].message),
    );
  });

  it("reads and changes the zone's SOA through dns_settings", async () => {
    const s = await cf.dns.settings.zone.get({ zone_id: zoneId });
    assert.deepEqual(s.soa, {
      mname: "ns1.edge-platform.test",
      rname: "dns.edge-platform.test",
      refresh: 10000,
      retry: 2400,
      expire: 604800,
      min_ttl: 1800,
      ttl: 3600,
    });
    const before = await udpQuery(port, "sdk-test.com", "SOA");
    const e = await cf.dns.settings.zone.edit({
      zone_id: zoneId,
      soa: { rname: "first.last@sdk-test.com", refresh: 7200, retry: 600, expire: 604800, min_ttl: 300, ttl: 1800, mname: "ns1.edge-platform.test" },
    });
    assert.equal(e.soa?.rname, "first\\.last.sdk-test.com");
    const after = await udpQuery(port, "sdk-test.com", "SOA");
    const soa = (after.answers![0] as any).data;
    assert.equal(soa.refresh, 7200);
    assert.equal(soa.minimum, 300);
    assert.ok(soa.serial > (before.answers![0] as any).data.serial, "the serial grows on every change");
  });

  it("deletes a zone", async () => {
    const z = await cf.zones.create({ account: { id: p.accountId }, name: "short-lived.net" });
    assert.equal((await cf.zones.delete({ zone_id: z.id }))?.id, z.id);
    assert.equal((await udpQuery(port, "short-lived.net", "SOA")).flags! & 0xf, 5, "REFUSED once the zone is gone");
  });
});
