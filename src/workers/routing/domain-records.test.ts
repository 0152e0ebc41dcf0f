import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import { request } from "undici";
import { after, before, test } from "node:test";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { dig, digAvailable } from "../../dns/testing/helpers.js";
import { createAccount, startPlatform, uploadScript } from "../testing/helpers.js";
import { withTempDir } from "../../core/testing/temp-dir.js";

const EDGE_V4 = "198.51.100.7";
const EDGE_V6 = "2001:db8::7";

let p: TestPlatform;
let dnsPort: number;
let accountB: string;
/** Headers of a token that holds DNS and Workers edit on account B only. */
let asB: Record<string, string>;
before(async () => {
  p = await startPlatform(["--edge-ipv4", EDGE_V4, "--edge-ipv6", EDGE_V6]);
  dnsPort = Number(p.endpoints.dns_udp.split(":").pop());
  accountB = await createAccount(p, "domain-records-b");
  const token = await p.api("POST", "/user/tokens", { name: "b-only", permissions: ["dns_edit", "workers_edit"], account_id: accountB }, p.keyHeaders());
  assert.equal(token.status, 200, JSON.stringify(token.body));
  asB = { authorization: `Bearer ${token.body.result.value}` };
  assert.equal((await uploadScript(p, "dr-app", `export default { fetch: () => new Response("app") };`)).status, 200);
  assert.equal((await uploadScript(p, "dr-other", `export default { fetch: () => new Response("other") };`)).status, 200);
});
after(() => p?.dispose());

async function zoneOf(accountId: string, headers?: Record<string, string>): Promise<{ id: string; name: string }> {
  const name = `dr${randomBytes(4).toString("hex")}.example`;
  const r = await p.api("POST", "/zones", { name, account: { id: accountId } }, headers ?? p.keyHeaders());
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { id: r.body.result.id, name };
}

const records = (zone: string, query = "") => p.api("GET", `/zones/${zone}/dns_records${query}`);
const attach = (body: Record<string, unknown>, headers?: Record<string, string>, account = p.accountId) =>
  p.api("PUT", `/accounts/${account}/workers/domains`, { service: "dr-app", environment: "production", ...body }, headers);

/** What our DNS server answers, by dig: the answer's short form, and the status line. */
async function ask(name: string, type: string): Promise<{ short: string; status: string }> {
  const full = await dig(dnsPort, [name, type, "+norec"]);
  return {
    short: (await dig(dnsPort, ["+short", name, type])).trim(),
    status: /status: (\w+)/.exec(full)?.[1] ?? full,
  };
}

async function needDig(t: { skip(msg: string): void }): Promise<boolean> {
  if (await digAvailable) return true;
  if (process.env.CI) assert.fail("dig is required under CI (apt-get install dnsutils)");
  t.skip("dig not installed (apt-get install dnsutils); these cases run under CI");
  return false;
}

test("attaching a Custom Domain makes its DNS record: answered with the edge addresses (also in AXFR), read-only in the records API, gone on detach", async (t) => {
  if (!(await needDig(t))) return;
  const zone = await zoneOf(p.accountId);
  const host = `shop.${zone.name}`;
  assert.equal((await ask(host, "A")).status, "NXDOMAIN", "nothing at the hostname before");
  const serialBefore = (await dig(dnsPort, ["+short", zone.name, "SOA"])).trim().split(" ")[2];

  const attached = await attach({ hostname: host });
  assert.equal(attached.status, 200, JSON.stringify(attached.body));
  assert.deepEqual(attached.body.messages, [], "edge addresses are configured: nothing to warn of");
  const domainId = attached.body.result.id;

  // The server answers the edge's addresses, as for any proxied name.
  assert.deepEqual(await ask(host, "A"), { short: EDGE_V4, status: "NOERROR" });
  assert.deepEqual(await ask(host, "AAAA"), { short: EDGE_V6, status: "NOERROR" });
  const serialAfter = (await dig(dnsPort, ["+short", zone.name, "SOA"])).trim().split(" ")[2];
  assert.ok(Number(serialAfter) > Number(serialBefore), `the serial moved on (${serialBefore} -> ${serialAfter}), so secondaries transfer the record`);
  const axfr = await dig(dnsPort, [zone.name, "AXFR"]);
  assert.match(axfr, new RegExp(`^${host.replaceAll(".", "\\.")}\\.\\s+\\d+\\s+IN\\s+A\\s+${EDGE_V4.replaceAll(".", "\\.")}$`, "m"), axfr);
  assert.match(axfr, new RegExp(`^${host.replaceAll(".", "\\.")}\\.\\s+\\d+\\s+IN\\s+AAAA\\s+${EDGE_V6}$`, "m"), axfr);

  // The records API shows it as hosted does (a proxied AAAA 100::), marked read-only, with the domain's id.
  const listed = await records(zone.id, `?name=${host}`);
  assert.equal(listed.body.result.length, 1, JSON.stringify(listed.body));
  const rec = listed.body.result[0];
  assert.equal(rec.id, domainId);
  assert.equal(rec.type, "AAAA");
  assert.equal(rec.content, "100::");
  assert.equal(rec.proxied, true);
  assert.equal(rec.meta.read_only, true);
  assert.match(rec.meta.managed_by, /Worker Custom Domain/);

  // Edits and deletes of it are refused (400, 1094), by every path; nothing changes.
  const path = `/zones/${zone.id}/dns_records/${rec.id}`;
  for (const [method, url, body] of [
    ["PATCH", path, { content: "100::1" }],
    ["PUT", path, { type: "AAAA", name: host, content: "2001:db8::99" }],
    ["DELETE", path, undefined],
    ["POST", `/zones/${zone.id}/dns_records/batch`, { deletes: [{ id: rec.id }] }],
    ["POST", `/zones/${zone.id}/dns_records/batch`, { patches: [{ id: rec.id, proxied: false }] }],
  ] as const) {
    const r = await p.api(method, url, body);
    assert.equal(r.status, 400, `${method} ${url}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.errors[0].code, 1094, JSON.stringify(r.body));
    assert.match(r.body.errors[0].message, /read-only/);
  }
  // An address record beside it is refused with the hosted code; other types are the account's to add.
  for (const type of ["A", "AAAA", "CNAME"]) {
    const content = type === "A" ? "203.0.113.5" : type === "AAAA" ? "2001:db8::5" : "elsewhere.example";
    const r = await p.api("POST", `/zones/${zone.id}/dns_records`, { type, name: host, content });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.errors[0].code, 81062, `${type}: ${JSON.stringify(r.body)}`);
  }
  assert.equal((await p.api("POST", `/zones/${zone.id}/dns_records`, { type: "TXT", name: host, content: "kept" })).status, 200);
  assert.deepEqual((await records(zone.id, `?name=${host}&type=AAAA`)).body.result, [rec]);

  // Moving the domain to another Worker keeps its record.
  assert.equal((await attach({ hostname: host, service: "dr-other" })).status, 200);
  assert.deepEqual(
    (await records(zone.id, `?name=${host}&type=AAAA`)).body.result.map((r: { id: string }) => r.id),
    [domainId],
  );

  // Detached: the record goes (the TXT stays, so the name answers NODATA), and edits are the account's again.
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/domains/${domainId}`)).status, 200);
  assert.deepEqual((await records(zone.id, `?name=${host}&type=AAAA`)).body.result, []);
  assert.deepEqual(await ask(host, "A"), { short: "", status: "NOERROR" });
  assert.doesNotMatch(await dig(dnsPort, [zone.name, "AXFR"]), new RegExp(`IN\\s+A\\s+${EDGE_V4.replaceAll(".", "\\.")}`));
  const txt = (await records(zone.id, `?name=${host}&type=TXT`)).body.result[0];
  assert.equal((await p.api("DELETE", `/zones/${zone.id}/dns_records/${txt.id}`)).status, 200);
  assert.equal((await ask(host, "A")).status, "NXDOMAIN");
});

test("a hostname with address records of the account's own is refused (409, 100117) unless override_existing_dns_record replaces them", async (t) => {
  if (!(await needDig(t))) return;
  const zone = await zoneOf(p.accountId);
  const host = `api.${zone.name}`;
  const own = await p.api("POST", `/zones/${zone.id}/dns_records`, { type: "A", name: host, content: "203.0.113.9" });
  assert.equal(own.status, 200, JSON.stringify(own.body));
  const mx = await p.api("POST", `/zones/${zone.id}/dns_records`, { type: "MX", name: host, content: "mail.example", priority: 10 });
  assert.equal(mx.status, 200);

  const refused = await attach({ hostname: host });
  assert.equal(refused.status, 409, JSON.stringify(refused.body));
  assert.equal(refused.body.errors[0].code, 100117);
  assert.match(refused.body.errors[0].message, /override_existing_dns_record/);
  // wrangler's path refuses the same way, before writing any of its domains.
  const wrangler = `/accounts/${p.accountId}/workers/scripts/dr-app/domains/records`;
  const fresh = `fresh.${zone.name}`;
  const refused2 = await p.api("PUT", wrangler, { override_scope: false, override_existing_origin: false, origins: [{ hostname: fresh }, { hostname: host }] });
  assert.equal(refused2.status, 409, JSON.stringify(refused2.body));
  assert.equal(refused2.body.errors[0].code, 100117);
  assert.deepEqual((await p.api("GET", `/accounts/${p.accountId}/workers/domains?zone_id=${zone.id}`)).body.result, [], "no domain attached");
  assert.deepEqual(
    (await records(zone.id)).body.result.map((r: { id: string }) => r.id).sort(),
    [own.body.result.id, mx.body.result.id].sort(),
    "no record made",
  );
  assert.equal((await ask(host, "A")).short, "203.0.113.9");

  const overridden = await p.api("PUT", wrangler, {
    override_scope: false,
    override_existing_origin: false,
    override_existing_dns_record: true,
    origins: [{ hostname: fresh }, { hostname: host }],
  });
  assert.equal(overridden.status, 200, JSON.stringify(overridden.body));
  const types = (await records(zone.id, `?name=${host}`)).body.result.map((r: { type: string; content: string }) => `${r.type} ${r.content}`).sort();
  assert.deepEqual(types, ["AAAA 100::", "MX mail.example"], "the A record was replaced; the MX stays");
  assert.equal((await ask(host, "A")).short, EDGE_V4);
  assert.equal((await ask(fresh, "AAAA")).short, EDGE_V6);

  // override_scope detaches the Worker's other domains, and their records go with them.
  const scoped = await p.api("PUT", wrangler, { override_scope: true, override_existing_origin: false, origins: [{ hostname: host }] });
  assert.equal(scoped.status, 200, JSON.stringify(scoped.body));
  assert.equal((await ask(fresh, "A")).status, "NXDOMAIN");
  assert.equal((await ask(host, "A")).short, EDGE_V4);

  // A record standing for the edge as a Custom Domain's does (made by hand, or left by a crash) is taken over silently.
  const standIn = `w.${zone.name}`;
  assert.equal((await p.api("POST", `/zones/${zone.id}/dns_records`, { type: "AAAA", name: standIn, content: "100::", proxied: true })).status, 200);
  const took = await attach({ hostname: standIn });
  assert.equal(took.status, 200, JSON.stringify(took.body));
  assert.deepEqual(
    (await records(zone.id, `?name=${standIn}`)).body.result.map((r: { id: string }) => r.id),
    [took.body.result.id],
  );

  // Deleting the Worker detaches its domains, and their records go.
  assert.equal((await uploadScript(p, "dr-doomed", `export default { fetch: () => new Response("x") };`)).status, 200);
  const doomed = await attach({ hostname: `doomed.${zone.name}`, service: "dr-doomed" });
  assert.equal(doomed.status, 200);
  assert.equal((await ask(`doomed.${zone.name}`, "A")).short, EDGE_V4);
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/scripts/dr-doomed`)).status, 200);
  assert.equal((await ask(`doomed.${zone.name}`, "A")).status, "NXDOMAIN");
  assert.deepEqual((await records(zone.id, `?name=doomed.${zone.name}`)).body.result, []);
});

test("two accounts: B attaches nothing in A's zone, and no record appears there; B's own zone gets B's record", async (t) => {
  if (!(await needDig(t))) return;
  const zoneA = await zoneOf(p.accountId);
  const zoneB = await zoneOf(accountB, asB);
  assert.equal((await uploadScript(p, "dr-b", `export default { fetch: () => new Response("b") };`, {}, { accountId: accountB, headers: asB })).status, 200);
  const crossed = await attach({ hostname: `b.${zoneA.name}`, service: "dr-b" }, asB, accountB);
  assert.equal(crossed.status, 400, JSON.stringify(crossed.body));
  assert.equal(crossed.body.errors[0].code, 10083);
  assert.deepEqual((await records(zoneA.id)).body.result, []);
  assert.equal((await ask(`b.${zoneA.name}`, "A")).status, "NXDOMAIN");

  const own = await attach({ hostname: `b.${zoneB.name}`, service: "dr-b" }, asB, accountB);
  assert.equal(own.status, 200, JSON.stringify(own.body));
  assert.equal((await ask(`b.${zoneB.name}`, "A")).short, EDGE_V4);
  // B sees its record read-only too, and A cannot reach it at all.
  const rec = (await p.api("GET", `/zones/${zoneB.id}/dns_records`, undefined, asB)).body.result[0];
  assert.equal(rec.meta.read_only, true);
  assert.equal((await p.api("DELETE", `/zones/${zoneB.id}/dns_records/${rec.id}`, undefined, asB)).status, 400);
  assert.equal((await p.api("GET", `/zones/${zoneB.id}/dns_records`)).status, 404);
});

test("nested zones of one account: a Custom Domain's record goes in the closest zone enclosing its hostname, a parent zone named instead is refused, and a child zone created later takes its domains", async (t) => {
  if (!(await needDig(t))) return;
  const parent = await zoneOf(p.accountId);
  const childName = `sub.${parent.name}`;
  const made = await p.api("POST", "/zones", { name: childName, account: { id: p.accountId } });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const child = { id: made.body.result.id, name: childName };
  const ids = async (zone: string, name: string) => (await records(zone, `?name=${name}`)).body.result.map((r: { id: string }) => r.id);

  // Found from the hostname, by both paths: the record is the child zone's, and the parent has none.
  const host = `api.${child.name}`;
  const attached = await attach({ hostname: host });
  assert.equal(attached.status, 200, JSON.stringify(attached.body));
  assert.equal(attached.body.result.zone_id, child.id);
  assert.deepEqual(await ids(child.id, host), [attached.body.result.id]);
  assert.deepEqual(await ids(parent.id, host), []);
  assert.deepEqual(await ask(host, "A"), { short: EDGE_V4, status: "NOERROR" });
  const wrangler = `/accounts/${p.accountId}/workers/scripts/dr-app/domains/records`;
  const viaWrangler = await p.api("PUT", wrangler, { override_scope: false, override_existing_origin: false, origins: [{ hostname: `w.${child.name}` }] });
  assert.equal(viaWrangler.status, 200, JSON.stringify(viaWrangler.body));
  assert.equal(viaWrangler.body.result[0].zone_id, child.id);
  assert.equal((await ask(`w.${child.name}`, "AAAA")).short, EDGE_V6);

  // The parent zone named (by id or by name, on both paths) is refused before anything is written; the child named is fine.
  for (const [path, body] of [
    [`/accounts/${p.accountId}/workers/domains`, { hostname: `z.${child.name}`, service: "dr-app", environment: "production", zone_id: parent.id }],
    [`/accounts/${p.accountId}/workers/domains`, { hostname: `z.${child.name}`, service: "dr-app", environment: "production", zone_name: parent.name }],
    [wrangler, { override_scope: false, override_existing_origin: false, origins: [{ hostname: `z.${child.name}`, zone_name: parent.name }] }],
  ] as const) {
    const refused = await p.api("PUT", path, body);
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(refused.body.errors[0].code, 10021);
    assert.match(refused.body.errors[0].message, new RegExp(`answered from the zone ${child.name.replaceAll(".", "\\.")}`));
  }
  assert.deepEqual((await p.api("GET", `/accounts/${p.accountId}/workers/domains?hostname=z.${child.name}`)).body.result, []);
  assert.deepEqual(await ids(parent.id, `z.${child.name}`), []);
  assert.deepEqual(await ids(child.id, `z.${child.name}`), []);
  const named = await attach({ hostname: `z.${child.name}`, zone_id: child.id });
  assert.equal(named.status, 200, JSON.stringify(named.body));
  assert.deepEqual(await ids(child.id, `z.${child.name}`), [named.body.result.id]);

  // Detached: the record leaves the child zone.
  assert.equal((await p.api("DELETE", `/accounts/${p.accountId}/workers/domains/${attached.body.result.id}`)).status, 200);
  assert.deepEqual(await ids(child.id, host), []);
  assert.equal((await ask(host, "A")).status, "NXDOMAIN");

  // A zone created inside the parent later answers for a domain attached there: the domain and its record move to it.
  const late = `shop.late.${parent.name}`;
  const before = await attach({ hostname: late });
  assert.equal(before.status, 200, JSON.stringify(before.body));
  assert.deepEqual(await ids(parent.id, late), [before.body.result.id]);
  const lateZone = await p.api("POST", "/zones", { name: `late.${parent.name}`, account: { id: p.accountId } });
  assert.equal(lateZone.status, 200, JSON.stringify(lateZone.body));
  // The move follows the zone's creation in the background; its last step stores the domain with the new zone.
  const domainOf = async () => (await p.api("GET", `/accounts/${p.accountId}/workers/domains/${before.body.result.id}`)).body.result;
  for (let i = 0; (await domainOf()).zone_id !== lateZone.body.result.id; i++) {
    assert.ok(i < 1000, "the domain never moved to the new zone");
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(await ids(parent.id, late), [], "the record left in the parent is removed");
  const moved = await domainOf();
  assert.deepEqual([moved.zone_id, moved.zone_name], [lateZone.body.result.id, `late.${parent.name}`]);
  assert.deepEqual(await ids(lateZone.body.result.id, late), [before.body.result.id]);
  assert.equal((await records(lateZone.body.result.id, `?name=${late}`)).body.result[0].meta.read_only, true);
  assert.deepEqual(await ask(late, "A"), { short: EDGE_V4, status: "NOERROR" });
});

test("without edge addresses the record is made and the answer says so; at start, a domain without its record gets one, and a record left without its domain is the account's", async (t) => {
  if (!(await needDig(t))) return;
  await withTempDir("edge-domain-records-", async (stateDir) => {
    const first = await startTestPlatform({ args: ["--dns-port", "0", "--edge-ipv4", "", "--edge-ipv6", ""], stateDir });
    let zone: { id: string; name: string };
    let kept: string;
    let orphan: string;
    let legacy: string;
    let childId: string;
    try {
      const port = Number(first.endpoints.dns_udp.split(":").pop());
      const name = `dr${randomBytes(4).toString("hex")}.example`;
      const z = await first.api("POST", "/zones", { name, account: { id: first.accountId } });
      assert.equal(z.status, 200, JSON.stringify(z.body));
      zone = { id: z.body.result.id, name };
      assert.equal((await uploadScript(first, "dr-restart", `export default { fetch: () => new Response("r") };`)).status, 200);
      const put = (hostname: string) =>
        first.api("PUT", `/accounts/${first.accountId}/workers/domains`, { hostname, service: "dr-restart", environment: "production" });
      const a = await put(`kept.${name}`);
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.deepEqual(
        a.body.messages.map((m: { code: number }) => m.code),
        [100190],
        "the answer says the name answers no address",
      );
      kept = a.body.result.id;
      assert.deepEqual(
        (await first.api("GET", `/zones/${zone.id}/dns_records?name=kept.${name}`)).body.result.map((r: { id: string }) => r.id),
        [kept],
      );
      const full = await dig(port, [`kept.${name}`, "A", "+norec"]);
      assert.match(full, /status: NOERROR/);
      assert.match(full, /ANSWER: 0,/);
      orphan = (await put(`orphan.${name}`)).body.result.id;
      const child = await first.api("POST", "/zones", { name: `sub.${name}`, account: { id: first.accountId } });
      assert.equal(child.status, 200, JSON.stringify(child.body));
      childId = child.body.result.id;
      legacy = (await put(`legacy.sub.${name}`)).body.result.id;
    } finally {
      await first.stop();
    }
    // As if the platform had stopped between the two writes: one domain without its record (or attached before
    // records were made), one record whose domain was removed.
    const dns = new Database(join(stateDir, "db", "dns.sqlite"));
    const routes = new Database(join(stateDir, "db", "worker-routes.sqlite"));
    try {
      assert.equal(dns.prepare("DELETE FROM records WHERE id = ?").run(kept).changes, 1);
      assert.equal(routes.prepare("DELETE FROM domains WHERE id = ?").run(orphan).changes, 1);
      // As the previous release left a domain whose request named the parent zone: domain and record in the parent.
      assert.equal(routes.prepare("UPDATE domains SET zone_id = ?, zone_name = ? WHERE id = ?").run(zone.id, zone.name, legacy).changes, 1);
      assert.equal(dns.prepare("UPDATE records SET zone_id = ? WHERE id = ?").run(zone.id, legacy).changes, 1);
    } finally {
      dns.close();
      routes.close();
    }

    const second = await startTestPlatform({
      args: ["--dns-port", "0", "--edge-ipv4", EDGE_V4],
      stateDir,
      credentials: { accountId: first.accountId, email: first.email, apiKey: first.apiKey, token: first.token },
    });
    try {
      const port = Number(second.endpoints.dns_udp.split(":").pop());
      assert.equal((await dig(port, ["+short", `kept.${zone.name}`, "A"])).trim(), EDGE_V4, "the missing record was made at start");
      const rec = (await second.api("GET", `/zones/${zone.id}/dns_records/${kept}`)).body.result;
      assert.equal(rec.meta.read_only, true);
      const left = (await second.api("GET", `/zones/${zone.id}/dns_records/${orphan}`)).body.result;
      assert.equal(left.meta.read_only, undefined, "no domain has its id: an ordinary record");
      assert.equal((await second.api("DELETE", `/zones/${zone.id}/dns_records/${orphan}`)).status, 200);
      assert.equal((await second.api("DELETE", `/zones/${zone.id}/dns_records/${kept}`)).status, 400);
      // The misplaced domain moved to the child zone at start, with its record; the parent keeps none.
      assert.equal((await dig(port, ["+short", `legacy.sub.${zone.name}`, "A"])).trim(), EDGE_V4);
      assert.equal((await second.api("GET", `/zones/${childId}/dns_records/${legacy}`)).body.result.meta.read_only, true);
      assert.equal((await second.api("GET", `/zones/${zone.id}/dns_records/${legacy}`)).status, 404);
      const d = (await second.api("GET", `/accounts/${second.accountId}/workers/domains/${legacy}`)).body.result;
      assert.deepEqual([d.zone_id, d.zone_name], [childId, `sub.${zone.name}`]);
    } finally {
      await second.stop();
    }
  });
});

test("a Custom Domain another account left behind (its zone deleted, the domain's removal lost) does not block the hostname for the zone's next owner, and is never named to it", async () => {
  await withTempDir("edge-domain-stale-", async (stateDir) => {
    const first = await startTestPlatform({ args: ["--dns-port", "0", "--edge-ipv4", EDGE_V4], stateDir });
    const name = `dr${randomBytes(4).toString("hex")}.example`;
    let staleRow: Record<string, unknown>;
    try {
      const b = await createAccount(first, "stale-b");
      const z = await first.api("POST", "/zones", { name, account: { id: b } }, first.keyHeaders());
      assert.equal(z.status, 200, JSON.stringify(z.body));
      const script = await uploadScript(
        first,
        "b-private-worker",
        `export default { fetch: () => new Response("b") };`,
        {},
        { accountId: b, headers: first.keyHeaders() },
      );
      assert.equal(script.status, 200, JSON.stringify(script.body));
      for (const hostname of [`app.${name}`, `www.${name}`]) {
        const d = await first.api(
          "PUT",
          `/accounts/${b}/workers/domains`,
          { hostname, service: "b-private-worker", environment: "production" },
          first.keyHeaders(),
        );
        assert.equal(d.status, 200, JSON.stringify(d.body));
      }
      // The zone's deletion removes its domains; keep their rows to put back, as if that removal had been lost.
      const routes = new Database(join(stateDir, "db", "worker-routes.sqlite"), { readonly: true });
      const rows = routes.prepare("SELECT * FROM domains WHERE account_id = ?").all(b) as Record<string, unknown>[];
      routes.close();
      assert.equal(rows.length, 2);
      staleRow = rows[0]!;
      assert.equal((await first.api("DELETE", `/zones/${z.body.result.id}`, undefined, first.keyHeaders())).status, 200);
      const routesRw = new Database(join(stateDir, "db", "worker-routes.sqlite"));
      const insert = routesRw.prepare("INSERT INTO domains (id, account_id, zone_id, zone_name, hostname, service, environment) VALUES (?, ?, ?, ?, ?, ?, ?)");
      for (const r of rows) insert.run(r.id, r.account_id, r.zone_id, r.zone_name, r.hostname, r.service, r.environment);
      routesRw.close();
    } finally {
      await first.stop();
    }

    const second = await startTestPlatform({
      args: ["--dns-port", "0", "--edge-ipv4", EDGE_V4],
      stateDir,
      credentials: { accountId: first.accountId, email: first.email, apiKey: first.apiKey, token: first.token },
    });
    try {
      // The zone is now account A's; A attaches both hostnames, by the API and by wrangler's path.
      const z = await second.api("POST", "/zones", { name, account: { id: second.accountId } });
      assert.equal(z.status, 200, JSON.stringify(z.body));
      assert.equal((await uploadScript(second, "a-app", `export default { fetch: () => new Response("a") };`)).status, 200);
      const byApi = await second.api("PUT", `/accounts/${second.accountId}/workers/domains`, {
        hostname: `app.${name}`,
        service: "a-app",
        environment: "production",
      });
      assert.equal(byApi.status, 200, `the stale domain of the other account blocked the hostname: ${JSON.stringify(byApi.body)}`);
      assert.equal(byApi.body.result.hostname, `app.${name}`);
      assert.notEqual(byApi.body.result.id, staleRow.id, "a domain of its own, not the other account's row");
      const byWrangler = await second.api("PUT", `/accounts/${second.accountId}/workers/scripts/a-app/domains/records`, {
        origins: [{ hostname: `www.${name}` }],
      });
      assert.equal(byWrangler.status, 200, JSON.stringify(byWrangler.body));
      assert.doesNotMatch(JSON.stringify([byApi.body, byWrangler.body]), /b-private-worker/);
      const listed = await second.api("GET", `/accounts/${second.accountId}/workers/domains`);
      assert.deepEqual(listed.body.result.map((d: { hostname: string; service: string }) => [d.hostname, d.service]).sort(), [
        [`app.${name}`, "a-app"],
        [`www.${name}`, "a-app"],
      ]);
      const served = await request(`${second.url}/`, { headers: { host: `app.${name}` } });
      assert.equal(await served.body.text(), "a");
    } finally {
      await second.stop();
    }
  });
});

test("a Custom Domain too long for its certificate's challenge name (over 237 characters) is refused at attach, by both attach paths, and writes no record (issue 30, hole 11)", async () => {
  const zone = await zoneOf(p.accountId);
  /** A hostname of exactly `length` characters in the zone. */
  const named = (length: number) => {
    const labels: string[] = [];
    let left = length - zone.name.length - 1;
    while (left > 0) {
      const n = Math.min(63, left === 64 ? 62 : left);
      labels.push("h".repeat(n));
      left -= n + 1;
    }
    return `${labels.join(".")}.${zone.name}`;
  };
  const tooLong = named(238);
  assert.equal(tooLong.length, 238);
  const r = await attach({ hostname: tooLong, zone_id: zone.id });
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.errors[0].code, 10021);
  assert.match(r.body.errors[0].message, /at most 237/);
  const viaScript = await p.api("PUT", `/accounts/${p.accountId}/workers/scripts/dr-app/domains/records`, {
    origins: [{ hostname: tooLong, zone_id: zone.id }],
    override_existing_origin: true,
  });
  assert.equal(viaScript.status, 400, JSON.stringify(viaScript.body));
  assert.equal((await records(zone.id)).body.result.length, 0, "nothing was written to the zone");

  const longest = named(237);
  const fine = await attach({ hostname: longest, zone_id: zone.id });
  assert.equal(fine.status, 200, JSON.stringify(fine.body));
  assert.equal(fine.body.result.hostname, longest);
});
