import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startDnsPlatform, udpQuery } from "../testing/helpers.js";

const EDIT = ["#dns_records:edit", "#dns_records:read", "#zone:edit", "#zone:read"];
const READ = ["#dns_records:read", "#zone:read"];

describe("zones answer the truth: the caller's permissions, and PATCH fields acted on or refused", () => {
  let p: TestPlatform;
  let port: number;
  let zoneA: string;
  let zoneB: string;
  /** Headers of a token with dns_edit on the first account and dns_read on the second. */
  let mixed: Record<string, string>;
  /** Headers of a token with dns_read on the first account only. */
  let readOnly: Record<string, string>;
  let accountB: string;

  before(async () => {
    ({ p, port } = await startDnsPlatform());
    const second = await p.api("POST", "/accounts", { name: "Second" }, p.keyHeaders());
    assert.equal(second.status, 200, JSON.stringify(second.body));
    accountB = second.body.result.id as string;
    zoneA = (await p.api("POST", "/zones", { name: "truth-a.example", account: { id: p.accountId } }, p.keyHeaders())).body.result.id;
    zoneB = (await p.api("POST", "/zones", { name: "truth-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    const token = async (name: string, grants: [string, string][]) => {
      const policies = grants.map(([account, permission]) => ({
        resources: { [`com.cloudflare.api.account.${account}`]: "*" },
        permission_groups: [{ id: permission }],
      }));
      const r = await p.api("POST", "/user/tokens", { name, policies }, p.keyHeaders());
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return { authorization: `Bearer ${r.body.result.value}` };
    };
    mixed = await token("edit A, read B", [
      [p.accountId, "dns_edit"],
      [accountB, "dns_read"],
    ]);
    readOnly = await token("read A", [[p.accountId, "dns_read"]]);
  });
  after(() => p?.dispose());

  it("tells each caller what it may do with each zone, from its permissions on the zone's account", async () => {
    const get = async (zone: string, headers: Record<string, string>) => (await p.api("GET", `/zones/${zone}`, undefined, headers)).body.result.permissions;
    assert.deepEqual(await get(zoneA, readOnly), READ, "a dns_read token is not told it may edit");
    assert.deepEqual(await get(zoneA, mixed), EDIT);
    assert.deepEqual(await get(zoneB, mixed), READ);
    assert.deepEqual(await get(zoneA, p.keyHeaders()), EDIT);
    const listed = (await p.api("GET", "/zones?order=name", undefined, mixed)).body.result;
    assert.deepEqual(
      listed.map((z: { name: string; permissions: string[] }) => [z.name, z.permissions]),
      [
        ["truth-a.example", EDIT],
        ["truth-b.example", READ],
      ],
    );
    // What it says is what the API does: the read-only caller's edit is refused.
    assert.equal((await p.api("PATCH", `/zones/${zoneA}`, { paused: true }, readOnly)).status, 403);
    assert.equal((await p.api("PATCH", `/zones/${zoneB}`, { paused: true }, mixed)).status, 403);
  });

  it("pauses and unpauses a zone, which changes what its proxied names answer", async () => {
    await p.api("POST", `/zones/${zoneA}/dns_records`, { type: "A", name: "www", content: "203.0.113.7", proxied: true });
    const answer = async () => (await udpQuery(port, "www.truth-a.example", "A")).answers?.map((a) => (a.type === "A" ? a.data : a.type));
    assert.deepEqual(await answer(), ["192.0.2.10", "192.0.2.11"], "proxied: the edge addresses");
    const paused = await p.api("PATCH", `/zones/${zoneA}`, { paused: true });
    assert.equal(paused.status, 200);
    assert.equal(paused.body.result.paused, true);
    assert.deepEqual(await answer(), ["203.0.113.7"], "paused: the origin");
    assert.equal((await p.api("GET", `/zones/${zoneA}`)).body.result.paused, true);
    assert.equal((await p.api("PATCH", `/zones/${zoneA}`, { paused: false })).body.result.paused, false);
    assert.deepEqual(await answer(), ["192.0.2.10", "192.0.2.11"]);
  });

  it("accepts the values a zone already has, and refuses changes it cannot make with a 400 naming the field", async () => {
    const before = (await p.api("GET", `/zones/${zoneA}`)).body.result;
    const same = await p.api("PATCH", `/zones/${zoneA}`, { type: "full", vanity_name_servers: [], plan: { id: before.plan.id } });
    assert.equal(same.status, 200, JSON.stringify(same.body));
    assert.equal(same.body.result.modified_on, before.modified_on, "nothing changed, and the zone says so");

    for (const [body, field] of [
      [{ type: "partial" }, "type"],
      [{ type: "secondary" }, "type"],
      [{ vanity_name_servers: ["ns1.vanity.example", "ns2.vanity.example"] }, "vanity_name_servers"],
      [{ plan: { id: "94f3b7b768b0458b56d2cac4fe5ec0f9" } }, "plan"],
      [{ paused: true, type: "partial" }, "type"],
      [{ type: "bogus" }, "type"],
      [{ name_servers: ["x.example"] }, "name_servers"],
    ] as const) {
      const r = await p.api("PATCH", `/zones/${zoneA}`, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
      assert.ok(r.body.errors[0].message.includes(field), `${JSON.stringify(body)}: ${r.body.errors[0].message}`);
    }
    const jump = await p.api("POST", "/zones", { name: "jump-start.example", jump_start: true });
    assert.equal(jump.status, 400, JSON.stringify(jump.body));
    assert.match(jump.body.errors[0].message, /^jump_start: scanning for existing records is not supported here/);
    const noJump = await p.api("POST", "/zones", { name: "jump-start.example", jump_start: false });
    assert.equal(noJump.status, 200, JSON.stringify(noJump.body));
    assert.equal((await p.api("DELETE", `/zones/${noJump.body.result.id}`)).status, 200);
    const after = (await p.api("GET", `/zones/${zoneA}`)).body.result;
    assert.equal(after.paused, false, "a refused PATCH changes nothing, not even the fields it could have changed");
    assert.deepEqual(after.vanity_name_servers, []);
    assert.equal(after.modified_on, before.modified_on);
  });

  it("refuses a zone inside or around another account's zone (it would answer for names the other account serves), allows it within one account", async () => {
    const create = (name: string, account: string, type?: string) =>
      p.api("POST", "/zones", { name, account: { id: account }, ...(type ? { type } : {}) }, p.keyHeaders());
    const answer = async () => JSON.stringify(await udpQuery(port, "www.truth-a.example", "A"), ["flags", "answers", "authorities", "name", "type", "data"]);
    const before = await answer();
    // Inside A's zone, by account B: a full zone, a deeper one, one spelled in capitals, a secondary zone.
    for (const [name, type] of [
      ["www.truth-a.example", undefined],
      ["x.www.truth-a.example", undefined],
      ["WWW.Truth-A.example", undefined],
      ["sec.truth-a.example", "secondary"],
    ] as const) {
      const r = await create(name, accountB, type);
      assert.equal(r.status, 400, `${name}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.errors[0].code, 1096, name);
      assert.match(r.body.errors[0].message, /inside, or holds, a zone of another account/);
      assert.ok(!JSON.stringify(r.body).includes(p.accountId), "the other account is not named");
    }
    assert.equal(await answer(), before, "A's names still answer from A's zone");
    // A name that only ends with the same characters is not inside.
    const sibling = await create("xtruth-a.example", accountB);
    assert.equal(sibling.status, 200, JSON.stringify(sibling.body));
    // Within one account, zones may nest; around another account's zone they may not.
    const holder = await create("nest.example", accountB);
    assert.equal(holder.status, 200, JSON.stringify(holder.body));
    assert.equal((await create("in.nest.example", accountB)).status, 200, "a zone inside a zone of its own account");
    assert.equal((await p.api("DELETE", `/zones/${holder.body.result.id}`, undefined, p.keyHeaders())).status, 200);
    const around = await create("nest.example", p.accountId);
    assert.equal(around.status, 400, `a zone around B's in.nest.example: ${JSON.stringify(around.body)}`);
    assert.equal(around.body.errors[0].code, 1096);
  });
});
