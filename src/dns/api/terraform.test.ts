import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startDnsPlatform } from "../testing/helpers.js";

/**
 * The requests Terraform's cloudflare provider v5 sends for zones, records, DNSSEC and secondary DNS, as its source
 * builds them (internal/services/<resource>/resource.go and model.go: the body is the resource's model marshalled by
 * apijson; an update of a record is a PUT of the whole model, a removed optional field sent as an explicit null; a
 * zone update is a PATCH of the changed fields only). The provider reads back the fields its model marks computed
 * after create/update and every field on refresh; a field missing or shaped otherwise fails `terraform apply` with
 * "Provider produced inconsistent result" or leaves a plan that never settles. The provider itself is not run here.
 */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe("Terraform provider v5: zones, dns_records, zone_dnssec, secondary DNS", () => {
  let p: TestPlatform;
  let zoneId: string;

  before(async () => {
    ({ p } = await startDnsPlatform());
  });
  after(() => p?.dispose());

  it("cloudflare_zone: create with type, read, PATCH of the changed field only, delete", async () => {
    const created = await p.api("POST", "/zones", { account: { id: p.accountId }, name: "tf-provider.com", type: "full" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const z = created.body.result;
    zoneId = z.id;
    // computed and computed_optional fields the provider reads after create
    assert.match(z.id, /^[0-9a-f]{32}$/);
    assert.equal(z.type, "full");
    assert.equal(z.paused, false);
    assert.deepEqual(z.vanity_name_servers, []);
    assert.match(z.created_on, RFC3339);
    assert.match(z.modified_on, RFC3339);
    assert.match(z.activated_on, RFC3339);
    assert.equal(z.status, "active");
    assert.equal(typeof z.development_mode, "number");
    assert.ok(Array.isArray(z.name_servers) && z.name_servers.length > 0);
    assert.ok(Array.isArray(z.permissions));
    assert.equal(typeof z.meta, "object");
    assert.equal(typeof z.owner, "object");
    assert.equal(typeof z.plan, "object");
    assert.deepEqual(z.account.id, p.accountId);

    const read = await p.api("GET", `/zones/${zoneId}`);
    assert.equal(read.body.result.name, "tf-provider.com");

    // `paused = true` on an existing zone: the provider PATCHes only what changed
    const paused = await p.api("PATCH", `/zones/${zoneId}`, { paused: true });
    assert.equal(paused.status, 200, JSON.stringify(paused.body));
    assert.equal(paused.body.result.paused, true);
    assert.equal((await p.api("GET", `/zones/${zoneId}`)).body.result.paused, true);
    assert.equal((await p.api("PATCH", `/zones/${zoneId}`, { paused: false })).body.result.paused, false);

    // a zone created with `paused = true` is created paused (the plan's value must come back)
    const pausedZone = await p.api("POST", "/zones", { account: { id: p.accountId }, name: "tf-paused.com", paused: true });
    assert.equal(pausedZone.status, 200, JSON.stringify(pausedZone.body));
    assert.equal(pausedZone.body.result.paused, true);
    assert.equal((await p.api("GET", `/zones/${pausedZone.body.result.id}`)).body.result.paused, true);
    // vanity name servers are not something the platform has: refused, and nothing is created
    const vanity = await p.api("POST", "/zones", { account: { id: p.accountId }, name: "tf-vanity.com", vanity_name_servers: ["ns1.tf-vanity.com"] });
    assert.equal(vanity.status, 400, JSON.stringify(vanity.body));
    assert.match(vanity.body.errors[0].message, /vanity_name_servers/);
    assert.equal((await p.api("GET", "/zones?name=tf-vanity.com")).body.result.length, 0);

    const del = await p.api("DELETE", `/zones/${pausedZone.body.result.id}`);
    assert.equal(del.status, 200);
    assert.equal(del.body.result.id, pausedZone.body.result.id);
    assert.equal((await p.api("GET", `/zones/${pausedZone.body.result.id}`)).status, 404);
  });

  it("cloudflare_dns_record: create, read, PUT update with explicit nulls, delete", async () => {
    const base = `/zones/${zoneId}/dns_records`;
    const created = await p.api("POST", base, {
      name: "www.tf-provider.com",
      type: "A",
      ttl: 3600,
      content: "203.0.113.10",
      proxied: false,
      comment: "web",
      tags: ["env:prod"],
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const r = created.body.result;
    assert.match(r.id, /^[0-9a-f]{32}$/);
    assert.equal(r.name, "www.tf-provider.com");
    assert.equal(r.content, "203.0.113.10");
    assert.equal(r.proxied, false);
    assert.equal(r.proxiable, true);
    assert.equal(r.ttl, 3600);
    assert.equal(r.comment, "web");
    assert.deepEqual(r.tags, ["env:prod"]);
    assert.equal(typeof r.settings, "object");
    assert.equal(typeof r.meta, "object");
    assert.match(r.created_on, RFC3339);
    assert.match(r.modified_on, RFC3339);
    assert.match(r.comment_modified_on, RFC3339);
    assert.match(r.tags_modified_on, RFC3339);

    // The update: PUT of the whole model; the comment removed from the config goes as null, the settings the
    // provider kept from state go back as they were read.
    const put = await p.api("PUT", `${base}/${r.id}`, {
      name: "www.tf-provider.com",
      type: "A",
      ttl: 1,
      content: "203.0.113.11",
      proxied: false,
      comment: null,
      tags: ["env:prod", "team:web"],
      settings: r.settings,
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.result.id, r.id);
    assert.equal(put.body.result.content, "203.0.113.11");
    assert.equal(put.body.result.ttl, 1);
    assert.equal(put.body.result.comment, null);
    assert.deepEqual(put.body.result.tags, ["env:prod", "team:web"]);
    assert.equal(put.body.result.created_on, r.created_on);
    const read = await p.api("GET", `${base}/${r.id}`);
    assert.equal(read.body.result.content, "203.0.113.11");
    assert.equal(read.body.result.comment, null);

    // CNAME with settings as a config sets them; the same object comes back
    const cname = await p.api("POST", base, {
      name: "blog.tf-provider.com",
      type: "CNAME",
      ttl: 1,
      content: "www.tf-provider.com",
      proxied: false,
      settings: { flatten_cname: false, ipv4_only: false, ipv6_only: false },
    });
    assert.equal(cname.status, 200, JSON.stringify(cname.body));
    assert.deepEqual(cname.body.result.settings, { flatten_cname: false, ipv4_only: false, ipv6_only: false });
    assert.equal(cname.body.result.content, "www.tf-provider.com");
    // a setting removed from the config goes as null in the PUT: unset, the others kept as sent
    const unset = await p.api("PUT", `${base}/${cname.body.result.id}`, {
      name: "blog.tf-provider.com",
      type: "CNAME",
      ttl: 1,
      content: "www.tf-provider.com",
      proxied: false,
      settings: { flatten_cname: null, ipv4_only: true, ipv6_only: null },
    });
    assert.equal(unset.status, 200, JSON.stringify(unset.body));
    assert.deepEqual(unset.body.result.settings, { ipv4_only: true });

    // MX with the top-level priority, then its priority removed from the config is a null in the PUT: refused, the
    // record as it was
    const mx = await p.api("POST", base, { name: "tf-provider.com", type: "MX", ttl: 1, content: "mail.tf-provider.com", priority: 10 });
    assert.equal(mx.status, 200, JSON.stringify(mx.body));
    assert.equal(mx.body.result.priority, 10);
    assert.equal(mx.body.result.content, "mail.tf-provider.com");
    const mxPut = await p.api("PUT", `${base}/${mx.body.result.id}`, {
      name: "tf-provider.com",
      type: "MX",
      ttl: 300,
      content: "mail.tf-provider.com",
      priority: 20,
      comment: null,
    });
    assert.equal(mxPut.status, 200, JSON.stringify(mxPut.body));
    assert.equal(mxPut.body.result.priority, 20);
    assert.equal(mxPut.body.result.ttl, 300);

    // TXT, quoted or not: the content comes back exactly as sent (the provider compares it with its plan), and the
    // same text in the other form is the same record
    const txt = await p.api("POST", base, { name: "_dmarc.tf-provider.com", type: "TXT", ttl: 1, content: '"v=DMARC1; p=none"' });
    assert.equal(txt.status, 200, JSON.stringify(txt.body));
    assert.equal(txt.body.result.content, '"v=DMARC1; p=none"');
    const spf = await p.api("POST", base, { name: "tf-provider.com", type: "TXT", ttl: 1, content: "v=spf1 include:_spf.example.net -all" });
    assert.equal(spf.status, 200, JSON.stringify(spf.body));
    assert.equal(spf.body.result.content, "v=spf1 include:_spf.example.net -all");
    assert.equal((await p.api("GET", `${base}/${spf.body.result.id}`)).body.result.content, "v=spf1 include:_spf.example.net -all");
    const twice = await p.api("POST", base, { name: "tf-provider.com", type: "TXT", ttl: 1, content: '"v=spf1 include:_spf.example.net -all"' });
    assert.equal(twice.status, 400, JSON.stringify(twice.body));
    const exported = await fetch(`${p.apiUrl}${base}/export`, { headers: p.headers() });
    assert.match(await exported.text(), /IN\tTXT\t"v=spf1 include:_spf\.example\.net -all"/);

    // SRV through `data`: content is computed from it
    const srv = await p.api("POST", base, {
      name: "_sip._udp.tf-provider.com",
      type: "SRV",
      ttl: 1,
      data: { priority: 10, weight: 20, port: 5060, target: "sip.tf-provider.com" },
    });
    assert.equal(srv.status, 200, JSON.stringify(srv.body));
    assert.deepEqual(srv.body.result.data, { priority: 10, weight: 20, port: 5060, target: "sip.tf-provider.com" });
    assert.equal(srv.body.result.content, "20 5060 sip.tf-provider.com");

    // The provider's `private_routing` is a hosted feature this platform does not have: refused when asked for
    const priv = await p.api("POST", base, { name: "priv.tf-provider.com", type: "A", ttl: 1, content: "203.0.113.12", private_routing: true });
    assert.equal(priv.status, 400, JSON.stringify(priv.body));
    assert.match(JSON.stringify(priv.body.errors), /private_routing/);
    assert.equal((await p.api("GET", `${base}?name=priv.tf-provider.com`)).body.result.length, 0);
    const privOff = await p.api("POST", base, { name: "priv.tf-provider.com", type: "A", ttl: 1, content: "203.0.113.12", private_routing: false });
    assert.equal(privOff.status, 200, JSON.stringify(privOff.body));

    const del = await p.api("DELETE", `${base}/${r.id}`);
    assert.equal(del.status, 200);
    assert.equal(del.body.result.id, r.id);
    assert.equal((await p.api("GET", `${base}/${r.id}`)).status, 404);
  });

  it("cloudflare_zone_dnssec: PATCH status active, read, PATCH disabled then DELETE on destroy", async () => {
    const on = await p.api("PATCH", `/zones/${zoneId}/dnssec`, { status: "active", dnssec_multi_signer: false, dnssec_presigned: false });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    const d = on.body.result;
    for (const k of ["algorithm", "digest", "digest_algorithm", "digest_type", "ds", "key_type", "public_key"]) assert.equal(typeof d[k], "string", k);
    assert.equal(typeof d.flags, "number");
    assert.equal(typeof d.key_tag, "number");
    assert.match(d.modified_on, RFC3339);
    assert.ok(["active", "pending"].includes(d.status));
    const read = await p.api("GET", `/zones/${zoneId}/dnssec`);
    assert.equal(read.body.result.ds, d.ds);

    assert.equal((await p.api("PATCH", `/zones/${zoneId}/dnssec`, { status: "disabled" })).body.result.status, "disabled");
    const del = await p.api("DELETE", `/zones/${zoneId}/dnssec`);
    assert.equal(del.status, 200, JSON.stringify(del.body));
    assert.equal((await p.api("GET", `/zones/${zoneId}/dnssec`)).body.result.status, "disabled");
  });

  it("cloudflare_dns_zone_transfers_tsig and _peer: create, read, PUT of the whole model, delete", async () => {
    const tsigs = `/accounts/${p.accountId}/secondary_dns/tsigs`;
    const secret = Buffer.alloc(32, 7).toString("base64");
    const t = await p.api("POST", tsigs, { algo: "hmac-sha256.", name: "tf-key.tf-provider.com.", secret });
    assert.equal(t.status, 200, JSON.stringify(t.body));
    assert.match(t.body.result.id, /^[0-9a-f]{32}$/);
    assert.equal(t.body.result.name, "tf-key.tf-provider.com.");
    assert.equal(t.body.result.algo, "hmac-sha256.");
    // A refresh reads every field back: `secret` is required in the provider's model, so it has to come back to a
    // caller who may edit the key, or every plan would replace it.
    const tRead = await p.api("GET", `${tsigs}/${t.body.result.id}`);
    assert.equal(tRead.body.result.secret, secret);
    assert.equal(tRead.body.result.name, "tf-key.tf-provider.com.");
    // ...but not to a token that may only read DNS
    const readOnly = await p.api(
      "POST",
      "/user/tokens",
      { name: "dns read", policies: [{ resources: { [`com.cloudflare.api.account.${p.accountId}`]: "*" }, permission_groups: [{ id: "dns_read" }] }] },
      p.keyHeaders(),
    );
    assert.equal(readOnly.status, 200, JSON.stringify(readOnly.body));
    const asReader = { authorization: `Bearer ${readOnly.body.result.value}` };
    assert.equal((await p.api("GET", `${tsigs}/${t.body.result.id}`, undefined, asReader)).body.result.secret, null);
    assert.equal((await p.api("GET", tsigs, undefined, asReader)).body.result[0].secret, null);
    const secret2 = Buffer.alloc(32, 9).toString("base64");
    const tPut = await p.api("PUT", `${tsigs}/${t.body.result.id}`, { algo: "hmac-sha256.", name: "tf-key.tf-provider.com.", secret: secret2 });
    assert.equal(tPut.status, 200, JSON.stringify(tPut.body));
    assert.equal(tPut.body.result.secret, secret2);

    const peers = `/accounts/${p.accountId}/secondary_dns/peers`;
    // The provider's create sends every field the config sets; a config with only `name` sends only it
    const bare = await p.api("POST", peers, { name: "tf-bare" });
    assert.equal(bare.status, 200, JSON.stringify(bare.body));
    // optional fields left out of the config must come back empty, or the next refresh would show a change
    const bareRead = (await p.api("GET", `${peers}/${bare.body.result.id}`)).body.result;
    assert.equal(bareRead.name, "tf-bare");
    assert.equal(bareRead.ip, null);
    assert.equal(bareRead.tsig_id, null);

    const peer = await p.api("POST", peers, { name: "tf-primary", ip: "192.0.2.53", port: 53, ixfr_enable: false, tsig_id: t.body.result.id });
    assert.equal(peer.status, 200, JSON.stringify(peer.body));
    const id = peer.body.result.id;
    assert.deepEqual(
      { ...(await p.api("GET", `${peers}/${id}`)).body.result, id: undefined },
      { id: undefined, name: "tf-primary", ip: "192.0.2.53", port: 53, ixfr_enable: false, tsig_id: t.body.result.id },
    );
    const peerPut = await p.api("PUT", `${peers}/${id}`, { name: "tf-primary", ip: "192.0.2.54", port: 5353, ixfr_enable: true, tsig_id: null });
    assert.equal(peerPut.status, 200, JSON.stringify(peerPut.body));
    assert.equal(peerPut.body.result.ip, "192.0.2.54");
    assert.equal(peerPut.body.result.port, 5353);
    assert.equal(peerPut.body.result.ixfr_enable, true);
    assert.equal(peerPut.body.result.tsig_id, null);

    // cloudflare_dns_zone_transfers_incoming on a secondary zone: POST, GET, PUT, DELETE
    const sec = await p.api("POST", "/zones", { account: { id: p.accountId }, name: "tf-secondary.com", type: "secondary" });
    assert.equal(sec.status, 200, JSON.stringify(sec.body));
    const inc = `/zones/${sec.body.result.id}/secondary_dns/incoming`;
    const incoming = await p.api("POST", inc, { name: "tf-secondary.com.", peers: [id], auto_refresh_seconds: 86400 });
    assert.equal(incoming.status, 200, JSON.stringify(incoming.body));
    const i = incoming.body.result;
    assert.equal(i.id, sec.body.result.id);
    assert.equal(i.name, "tf-secondary.com.");
    assert.deepEqual(i.peers, [id]);
    assert.equal(i.auto_refresh_seconds, 86400);
    assert.equal(typeof i.soa_serial, "number");
    for (const k of ["created_time", "modified_time"]) assert.equal(typeof i[k], "string", k);
    const incPut = await p.api("PUT", inc, { name: "tf-secondary.com.", peers: [id], auto_refresh_seconds: 3600 });
    assert.equal(incPut.status, 200, JSON.stringify(incPut.body));
    assert.equal((await p.api("GET", inc)).body.result.auto_refresh_seconds, 3600);
    assert.equal((await p.api("DELETE", inc)).status, 200);
    assert.equal((await p.api("GET", inc)).status, 404);

    assert.equal((await p.api("DELETE", `${peers}/${id}`)).status, 200);
    assert.equal((await p.api("GET", `${peers}/${id}`)).status, 404);
    assert.equal((await p.api("DELETE", `${tsigs}/${t.body.result.id}`)).status, 200);
    assert.equal((await p.api("GET", `${tsigs}/${t.body.result.id}`)).status, 404);
  });
});
