import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createAccount } from "../../workers/testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z$/;
const SETTING_IDS = [
  "always_use_https",
  "browser_cache_ttl",
  "cache_level",
  "development_mode",
  "http2",
  "ipv6",
  "min_tls_version",
  "ssl",
  "tls_1_3",
  "websockets",
];

describe("zone settings API (hosted paths and shapes)", () => {
  let p: TestPlatform;
  let zoneA: string;
  let zoneB: string;
  let accountB: string;
  let tokenB: string;
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const token = async (permissions: string[], accountId = p.accountId) => {
    const r = await p.api("POST", "/user/tokens", { name: `t-${permissions.join("-")}`, permissions, account_id: accountId }, p.keyHeaders());
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.result.value as string;
  };

  before(async () => {
    p = await startTestPlatform();
    zoneA = (await p.api("POST", "/zones", { name: "settings-a.example", account: { id: p.accountId } })).body.result.id;
    accountB = await createAccount(p, "settings-b");
    const made = await p.api("POST", "/zones", { name: "settings-b.example", account: { id: accountB } }, p.keyHeaders());
    zoneB = made.body.result.id;
    tokenB = await token(["zone_settings_edit", "dns_edit"], accountB);
  });
  after(() => p?.dispose());

  it("lists every setting with its default and no modified_on; one setting reads the same", async () => {
    const list = await p.api("GET", `/zones/${zoneA}/settings`);
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.result.map((s: { id: string }) => s.id),
      SETTING_IDS,
    );
    const ssl = list.body.result.find((s: { id: string }) => s.id === "ssl");
    assert.deepEqual(ssl, { id: "ssl", value: "flexible", editable: true, modified_on: null });
    const dev = list.body.result.find((s: { id: string }) => s.id === "development_mode");
    assert.deepEqual(dev, { id: "development_mode", value: "off", editable: true, modified_on: null, time_remaining: 0 });
    assert.deepEqual((await p.api("GET", `/zones/${zoneA}/settings/websockets`)).body.result, {
      id: "websockets",
      value: "on",
      editable: true,
      modified_on: null,
    });
  });

  it("PATCH of one setting stores it, answers {id, value, editable, modified_on}, and is read back", async () => {
    const r = await p.api("PATCH", `/zones/${zoneA}/settings/ssl`, { value: "full" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.result.id, "ssl");
    assert.equal(r.body.result.value, "full");
    assert.equal(r.body.result.editable, true);
    assert.match(r.body.result.modified_on, ISO);
    assert.equal((await p.api("GET", `/zones/${zoneA}/settings/ssl`)).body.result.value, "full");
    const dev = await p.api("PATCH", `/zones/${zoneA}/settings/development_mode`, { value: "on" });
    assert.equal(dev.body.result.value, "on");
    assert.ok(dev.body.result.time_remaining > 3 * 3600 - 60 && dev.body.result.time_remaining <= 3 * 3600);
  });

  it('every setting is editable; tls_1_3 "zrt" (0-RTT, not provided) is refused with 1007 and writes nothing', async () => {
    const list = (await p.api("GET", `/zones/${zoneA}/settings`)).body.result as { id: string; editable: boolean }[];
    assert.deepEqual(
      list.filter((s) => !s.editable).map((s) => s.id),
      [],
    );
    const zrt = await p.api("PATCH", `/zones/${zoneA}/settings/tls_1_3`, { value: "zrt" });
    assert.equal(zrt.status, 400);
    assert.equal(zrt.body.errors[0].code, 1007);
    assert.match(zrt.body.errors[0].message, /0-RTT.* is not provided here/);
    assert.deepEqual((await p.api("GET", `/zones/${zoneA}/settings/tls_1_3`)).body.result, { id: "tls_1_3", value: "on", editable: true, modified_on: null });
    for (const [id, bad] of [
      ["min_tls_version", "1.4"],
      ["min_tls_version", 1.2],
      ["ipv6", "yes"],
    ] as const) {
      const r = await p.api("PATCH", `/zones/${zoneA}/settings/${id}`, { value: bad });
      assert.equal(r.status, 400, `${id} ${bad}`);
      assert.equal(r.body.errors[0].code, 1007);
    }
  });

  it("PATCH of several settings changes all of them, or none when one is refused", async () => {
    const r = await p.api("PATCH", `/zones/${zoneA}/settings`, {
      items: [
        { id: "always_use_https", value: "on" },
        { id: "websockets", value: "off" },
      ],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(
      r.body.result.map((s: { id: string; value: string }) => [s.id, s.value]),
      [
        ["always_use_https", "on"],
        ["websockets", "off"],
      ],
    );
    const refused = await p.api("PATCH", `/zones/${zoneA}/settings`, {
      items: [
        { id: "always_use_https", value: "off" },
        { id: "ssl", value: "sometimes" },
      ],
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.errors[0].code, 1007);
    assert.equal((await p.api("GET", `/zones/${zoneA}/settings/always_use_https`)).body.result.value, "on", "nothing of a refused PATCH is written");
    await p.api("PATCH", `/zones/${zoneA}/settings/always_use_https`, { value: "off" });
    await p.api("PATCH", `/zones/${zoneA}/settings/websockets`, { value: "on" });
  });

  it("a setting the platform does not have is refused with the hosted 1006, on read and on write; bad bodies are 400s", async () => {
    for (const [method, path, body] of [
      ["GET", `/zones/${zoneA}/settings/rocket_loader`, undefined],
      ["PATCH", `/zones/${zoneA}/settings/rocket_loader`, { value: "on" }],
      ["PATCH", `/zones/${zoneA}/settings/__proto__`, { value: "on" }],
      ["PATCH", `/zones/${zoneA}/settings`, { items: [{ id: "constructor", value: "on" }] }],
    ] as const) {
      const r = await p.api(method, path, body);
      assert.equal(r.status, 400, `${method} ${path}`);
      assert.equal(r.body.errors[0].code, 1006);
      assert.match(r.body.errors[0].message, /^Unrecognized zone setting name: /);
    }
    for (const [path, body] of [
      ["ssl", {}],
      ["ssl", []],
      ["", { items: [] }],
      ["", { items: "ssl" }],
      ["", { items: Array.from({ length: 101 }, () => ({ id: "ssl", value: "off" })) }],
      ["", { items: [{ id: "ssl" }] }],
      [
        "",
        {
          items: [
            { id: "ssl", value: "off" },
            { id: "ssl", value: "full" },
          ],
        },
      ],
    ] as const) {
      const r = await p.api("PATCH", `/zones/${zoneA}/settings${path ? `/${path}` : ""}`, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.success, false);
    }
    for (const value of [1, "ON", null, ["on"], { on: true }]) {
      const r = await p.api("PATCH", `/zones/${zoneA}/settings/websockets`, { value });
      assert.equal(r.status, 400, JSON.stringify(value));
      assert.equal(r.body.errors[0].code, 1007);
    }
    assert.equal((await p.api("PATCH", `/zones/${zoneA}/settings/browser_cache_ttl`, { value: 7201 })).status, 400);
    assert.equal((await p.api("GET", `/zones/${"0".repeat(32)}/settings`)).status, 404);
  });

  it("tenants never see each other's settings; read-only tokens read but do not edit", async () => {
    // Account B's token: its own zone yes, account A's zone is answered as missing (read and write).
    assert.equal((await p.api("PATCH", `/zones/${zoneB}/settings/ssl`, { value: "strict" }, as(tokenB))).status, 200);
    assert.equal((await p.api("GET", `/zones/${zoneA}/settings`, undefined, as(tokenB))).status, 404);
    assert.equal((await p.api("PATCH", `/zones/${zoneA}/settings/ssl`, { value: "off" }, as(tokenB))).status, 404);
    assert.equal((await p.api("GET", `/zones/${zoneA}/settings/ssl`)).body.result.value, "full", "B changed nothing of A");
    // The bootstrap token is account A's only: B's zone is missing to it.
    assert.equal((await p.api("GET", `/zones/${zoneB}/settings`)).status, 404);
    const reader = await token(["zone_settings_read"]);
    assert.equal((await p.api("GET", `/zones/${zoneA}/settings/ssl`, undefined, as(reader))).status, 200);
    const denied = await p.api("PATCH", `/zones/${zoneA}/settings/ssl`, { value: "off" }, as(reader));
    assert.equal(denied.status, 403);
    const unrelated = await token(["kv_edit"]);
    assert.equal((await p.api("GET", `/zones/${zoneA}/settings`, undefined, as(unrelated))).status, 404);
    const groups = await p.api("GET", "/user/tokens/permission_groups");
    const names = groups.body.result.map((g: { name: string }) => g.name);
    assert.ok(names.includes("Zone Settings Read") && names.includes("Zone Settings Edit"), names.join(", "));
  });

  it("the cloudflare SDK's zones.settings.get/edit work unchanged", async () => {
    const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    const edited = await cf.zones.settings.edit("websockets", { zone_id: zoneA, id: "websockets", value: "off" } as never);
    assert.equal((edited as { value: string }).value, "off");
    const got = await cf.zones.settings.get("websockets", { zone_id: zoneA });
    assert.equal((got as { value: string }).value, "off");
    await assert.rejects(cf.zones.settings.get("mirage", { zone_id: zoneA }), (e: any) => e.status === 400 && e.errors[0].code === 1006);
    await cf.zones.settings.edit("websockets", { zone_id: zoneA, id: "websockets", value: "on" } as never);
  });

  it("a deleted zone's settings go with it (its rows are removed); a zone of the same name starts from the defaults", async () => {
    const id = (await p.api("POST", "/zones", { name: "settings-gone.example", account: { id: p.accountId } })).body.result.id;
    await p.api("PATCH", `/zones/${id}/settings/ssl`, { value: "strict" });
    assert.equal((await p.api("DELETE", `/zones/${id}`)).status, 200);
    const db = new Database(join(p.stateDir, "db", "edge-settings.sqlite"), { readonly: true });
    try {
      await eventually(() => (db.prepare("SELECT count(*) AS n FROM zone_settings WHERE zone_id = ?").get(id) as { n: number }).n === 0, "the rows removed");
    } finally {
      db.close();
    }
    const again = (await p.api("POST", "/zones", { name: "settings-gone.example", account: { id: p.accountId } })).body.result.id;
    assert.deepEqual((await p.api("GET", `/zones/${again}/settings/ssl`)).body.result, { id: "ssl", value: "flexible", editable: true, modified_on: null });
  });
});
