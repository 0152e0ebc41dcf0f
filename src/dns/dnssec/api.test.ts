import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import Cloudflare from "cloudflare";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../core/testing/hostile.js";
import { createZone, startDnsPlatform } from "../testing/helpers.js";
import { askDo } from "../testing/dnssec.js";

const DS = /^api-a\.example\. 3600 IN DS \d+ 13 2 [0-9A-F]{64}$/;

describe("the DNSSEC API and CLI: v4 fields and states, zone permissions, two accounts", () => {
  let p: TestPlatform;
  let port: number;
  let zoneA: string;
  let zoneB: string;
  /** A token with dns_edit on the first account only. */
  let editA: Record<string, string>;
  /** A token with dns_read on the first account only. */
  let readA: Record<string, string>;

  before(async () => {
    ({ p, port } = await startDnsPlatform());
    const accountB = await createAccount(p, "Second");
    zoneA = await createZone(p, "api-a.example");
    zoneB = (await p.api("POST", "/zones", { name: "api-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    const token = async (permission: string) => {
      const r = await p.api("POST", "/user/tokens", { name: permission, permissions: [permission], account_id: p.accountId }, p.keyHeaders());
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return { authorization: `Bearer ${r.body.result.value}` };
    };
    editA = await token("dns_edit");
    readA = await token("dns_read");
  });
  after(() => p?.dispose());

  it("enables, shows, disables and re-enables with the same keys, deletes and then makes new ones, through the official SDK", async () => {
    const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    const off = await cf.dns.dnssec.get({ zone_id: zoneA });
    assert.equal(off.status, "disabled");
    assert.equal(off.ds, null);

    const on = await cf.dns.dnssec.edit({ zone_id: zoneA, status: "active" });
    assert.equal(on.status, "pending", "pending for the DNSKEY TTL after signing starts");
    assert.equal(on.algorithm, "13");
    assert.equal(on.digest_type, "2");
    assert.equal(on.digest_algorithm, "SHA256");
    assert.equal(on.flags, 257);
    assert.equal(on.key_type, "ECDSAP256SHA256");
    assert.match(on.ds ?? "", DS);
    assert.ok(on.ds?.endsWith(on.digest!) && on.ds.includes(` ${on.key_tag} `));
    assert.equal(Buffer.from(on.public_key!, "base64").length, 64, "a P-256 public key");
    assert.deepEqual(await cf.dns.dnssec.get({ zone_id: zoneA }), on);
    const keys = await askDo(port, "api-a.example", "DNSKEY", true);
    assert.equal(keys.answers?.filter((a) => a.type === "DNSKEY").length, 2, "a KSK and a ZSK");

    const disabled = await cf.dns.dnssec.edit({ zone_id: zoneA, status: "disabled" });
    assert.equal(disabled.status, "disabled");
    assert.equal((await askDo(port, "api-a.example", "DNSKEY", true)).answers?.length, 0, "no DNSKEY once disabled");
    const again = await cf.dns.dnssec.edit({ zone_id: zoneA, status: "active" });
    assert.equal(again.ds, on.ds, "re-enabling keeps the keys, so the DS at the registrar stays right");

    assert.equal(await cf.dns.dnssec.delete({ zone_id: zoneA }), zoneA);
    assert.equal((await cf.dns.dnssec.get({ zone_id: zoneA })).status, "disabled");
    const fresh = await cf.dns.dnssec.edit({ zone_id: zoneA, status: "active" });
    assert.notEqual(fresh.ds, on.ds, "after a delete, new keys");
  });

  it("refuses what it does not do with a 400 naming the field, and changes nothing", async () => {
    for (const [field, body] of [
      ["dnssec_use_nsec3", { dnssec_use_nsec3: true }],
      ["dnssec_multi_signer", { dnssec_multi_signer: true }],
      ["dnssec_presigned", { status: "disabled", dnssec_presigned: true }],
      ["status", { status: "pending" }],
      ["colour", { colour: "red" }],
    ] as const) {
      const r = await p.api("PATCH", `/zones/${zoneA}/dnssec`, body);
      assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.body)}`);
      assert.match(JSON.stringify(r.body.errors), new RegExp(field === "colour" ? "colour|Unrecognized" : field));
    }
    assert.notEqual((await p.api("GET", `/zones/${zoneA}/dnssec`)).body.result.status, "disabled", "still signed");
    assert.equal((await p.api("PATCH", `/zones/${zoneA}/dnssec`, { dnssec_use_nsec3: false, dnssec_multi_signer: false })).status, 200);
    const early = await p.api("POST", `/zones/${zoneA}/dnssec/rollover`, { key: "zsk" });
    assert.equal(early.status, 200, "starting a rollover is always safe");
    const tooEarly = await p.api("POST", `/zones/${zoneA}/dnssec/rollover`, { key: "zsk" });
    assert.equal(tooEarly.status, 400);
    assert.match(tooEarly.body.errors[0].message, /Too early to make the new ZSK sign: wait until \d{4}-/);
    assert.equal((await p.api("POST", `/zones/${zoneA}/dnssec/rollover`, { key: "ksk" })).status, 400, "one rollover at a time");
    assert.equal((await p.api("POST", `/zones/${zoneA}/dnssec/rollover`, { key: "both" })).status, 400);
  });

  it("checks the zone's permissions: another account's zone is missing (404), a read-only token may read but not change (403)", async () => {
    for (const [method, path, body] of [
      ["GET", `/zones/${zoneB}/dnssec`, undefined],
      ["PATCH", `/zones/${zoneB}/dnssec`, { status: "active" }],
      ["DELETE", `/zones/${zoneB}/dnssec`, undefined],
      ["POST", `/zones/${zoneB}/dnssec/rollover`, { key: "zsk" }],
    ] as const) {
      const r = await p.api(method, path, body, editA);
      assert.equal(r.status, 404, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.errors[0].code, 1001);
    }
    assert.equal((await p.api("GET", `/zones/${zoneB}/dnssec`, undefined, p.keyHeaders())).body.result.status, "disabled", "untouched");
    assert.equal((await p.api("GET", `/zones/${zoneA}/dnssec`, undefined, readA)).status, 200);
    for (const [method, path, body] of [
      ["PATCH", `/zones/${zoneA}/dnssec`, { status: "disabled" }],
      ["DELETE", `/zones/${zoneA}/dnssec`, undefined],
      ["POST", `/zones/${zoneA}/dnssec/rollover`, { key: "ksk" }],
    ] as const)
      assert.equal((await p.api(method, path, body, readA)).status, 403, `${method} ${path}`);
    assert.notEqual((await p.api("GET", `/zones/${zoneA}/dnssec`)).body.result.status, "disabled");
  });

  it("edgecli dns dnssec enable|status|disable prints the DS record; errors go to stderr with exit code 1", async () => {
    const zone = await createZone(p, "cli-dnssec.example");
    const enabled = await p.cli(["dns", "dnssec", "enable", "cli-dnssec.example"]);
    assert.equal(enabled.code, 0, enabled.stderr);
    assert.match(enabled.stdout, /DNSSEC is pending for cli-dnssec\.example\./);
    assert.match(enabled.stdout, /^  cli-dnssec\.example\. 3600 IN DS \d+ 13 2 [0-9A-F]{64}$/m);
    const status = await p.cli(["dns", "dnssec", "status", zone]);
    assert.equal(status.code, 0, status.stderr);
    assert.ok(status.stdout.includes((await p.api("GET", `/zones/${zone}/dnssec`)).body.result.ds));
    const roll = await p.cli(["dns", "dnssec", "rollover", "cli-dnssec.example", "--zsk"]);
    assert.equal(roll.code, 0, roll.stderr);
    assert.match(roll.stdout, /ZSK rollover in progress \(publish\); next: make the new ZSK sign, from \d{4}-/);
    const neither = await p.cli(["dns", "dnssec", "rollover", "cli-dnssec.example"]);
    assert.equal(neither.code, 1);
    assert.match(neither.stderr, /--zsk or --ksk/);
    const early = await p.cli(["dns", "dnssec", "rollover", "cli-dnssec.example", "--zsk"]);
    assert.equal(early.code, 1);
    assert.match(early.stderr, /Too early/);
    const disabled = await p.cli(["dns", "dnssec", "disable", "cli-dnssec.example"]);
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.match(disabled.stdout, /DNSSEC is disabled for cli-dnssec\.example\./);
    const help = await p.cli(["dns", "dnssec", "--help"]);
    assert.match(help.stdout + help.stderr, /rollover/);
  });
});
