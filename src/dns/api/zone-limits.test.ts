import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import Cloudflare from "cloudflare";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startDnsPlatform, udpQuery } from "../testing/helpers.js";

/** The record limit these tests run with (--dns-max-records-per-zone). */
const MAX = 5;

describe("zone names that are public suffixes, and the per-zone record limit (two accounts)", () => {
  const stateDir = mkdtempSync(join(tmpdir(), "edge-dns-limits-"));
  let p: TestPlatform;
  let port: number;
  let accountB: string;
  let zoneA: string;
  let zoneB: string;
  /** The credentials and account of the first start (a restart on the same state makes none). */
  let auth: Record<string, string>;
  let accountA: string;

  const start = async (args: string[] = []) => {
    ({ p, port } = await startDnsPlatform(["--dns-max-records-per-zone", String(MAX), "--dns-allow-zone", "duckdns.org", ...args], stateDir));
  };
  const createZone = (name: string, account: string) => p.api("POST", "/zones", { name, account: { id: account } }, auth);
  const post = (zone: string, body: Record<string, unknown>) => p.api("POST", `/zones/${zone}/dns_records`, body, auth);
  const count = async (zone: string) => (await p.api("GET", `/zones/${zone}/dns_records?per_page=1`, undefined, auth)).body.result_info.total_count;
  const importFile = async (zone: string, file: string) => {
    const form = new FormData();
    form.append("file", new Blob([file]), "zone.txt");
    const res = await fetch(`${p.apiUrl}/zones/${zone}/dns_records/import`, { method: "POST", headers: auth, body: form });
    return { status: res.status, body: (await res.json()) as any };
  };
  const refused = (res: { status: number; body: any }, code: number) => {
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.equal(res.body.success, false);
    assert.equal(res.body.errors[0].code, code, JSON.stringify(res.body));
  };

  before(async () => {
    await start();
    auth = p.keyHeaders();
    accountA = p.accountId;
    const second = await p.api("POST", "/accounts", { name: "Second" }, auth);
    accountB = second.body.result.id as string;
    zoneA = (await createZone("limits-a.example", accountA)).body.result.id;
    zoneB = (await createZone("limits-b.example", accountB)).body.result.id;
  });
  after(async () => {
    await p?.dispose();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("refuses a zone that is a public suffix (ICANN or private section) or a TLD, so no account can block the names under it", async () => {
    for (const name of ["co.uk", "CO.UK.", "github.io", "s3.amazonaws.com", "nom.br"]) {
      const res = await createZone(name, accountA);
      refused(res, 1099);
      assert.match(res.body.errors[0].message, /unable to identify .* as a registered domain/);
    }
    for (const name of ["com", "uk", "example"]) refused(await createZone(name, accountA), 1097);
    // Under the suffixes each account may have its own domains, and a name under an unlisted TLD (.test) is a domain.
    for (const [name, account] of [
      ["mine.co.uk", accountA],
      ["theirs.co.uk", accountB],
      ["someone.github.io", accountB],
      ["lab.test", accountB],
    ]) {
      const res = await createZone(name, account);
      assert.equal(res.status, 200, `${name}: ${JSON.stringify(res.body)}`);
    }
    // A private-section suffix the operator allowed (--dns-allow-zone) may be created; it then holds the names
    // under it as any zone does.
    const allowed = await createZone("duckdns.org", accountA);
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
    refused(await createZone("host.duckdns.org", accountB), 1096);
  });

  it("refuses the SDK's zones.create of a public suffix with the hosted API's code", async () => {
    const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    await assert.rejects(cf.zones.create({ account: { id: accountA }, name: "blogspot.com" }), (e: any) => e.status === 400 && e.errors[0].code === 1099);
    await assert.rejects(
      cf.dns.records.batch({
        zone_id: zoneA,
        posts: Array.from({ length: MAX + 1 }, (_, i) => ({ type: "A" as const, name: `sdk${i}`, content: "203.0.113.5", ttl: 1 })),
      }),
      (e: any) => e.status === 400 && e.errors[0].code === 81045,
    );
    assert.equal(await count(zoneA), 0);
  });

  it("bounds the records of each zone across creates, batches and imports, writing nothing of a refused change", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await post(zoneA, { type: "A", name: `h${i}`, content: "203.0.113.1" })).status, 200);
    // A batch and an import that would pass the limit: refused whole.
    const batch = await p.api(
      "POST",
      `/zones/${zoneA}/dns_records/batch`,
      { posts: [0, 1, 2].map((i) => ({ type: "TXT", name: `b${i}`, content: "b" })) },
      auth,
    );
    refused(batch, 81045);
    assert.match(batch.body.errors[0].message, /^Record quota exceeded\. A zone holds at most 5 records/);
    refused(await importFile(zoneA, "i0 300 IN A 203.0.113.2\ni1 300 IN A 203.0.113.3\ni2 300 IN A 203.0.113.4\n"), 81045);
    assert.equal(await count(zoneA), 3);
    // Up to the limit, then not one more.
    assert.equal((await importFile(zoneA, "i0 300 IN A 203.0.113.2\ni1 300 IN A 203.0.113.3\n")).status, 200);
    assert.equal(await count(zoneA), MAX);
    refused(await post(zoneA, { type: "A", name: "over", content: "203.0.113.9" }), 81045);
    // Replacing and deleting stay possible at the limit; a delete makes room for a post in the same batch.
    const list = (await p.api("GET", `/zones/${zoneA}/dns_records?per_page=10`, undefined, auth)).body.result;
    const swap = await p.api(
      "POST",
      `/zones/${zoneA}/dns_records/batch`,
      {
        deletes: [{ id: list[0].id }],
        patches: [{ id: list[1].id, content: "203.0.113.77" }],
        posts: [{ type: "A", name: "swapped", content: "203.0.113.8" }],
      },
      auth,
    );
    assert.equal(swap.status, 200, JSON.stringify(swap.body));
    assert.equal(await count(zoneA), MAX);
    // The other account's zone has a limit of its own, untouched by the first's.
    for (let i = 0; i < MAX; i++) assert.equal((await post(zoneB, { type: "TXT", name: `t${i}`, content: "x" })).status, 200);
    refused(await post(zoneB, { type: "TXT", name: "t-over", content: "x" }), 81045);
  });

  it("keeps serving, and lets its owner edit, a zone that is a public suffix created before the check", async () => {
    // Created while the operator allowed it; the platform then restarts without the flag (as an upgrade would find
    // such a zone): nothing of it is lost.
    await p.stop();
    await start(["--dns-allow-zone", "nom.br"]);
    const legacy = await createZone("nom.br", accountA);
    assert.equal(legacy.status, 200, JSON.stringify(legacy.body));
    const zone = legacy.body.result.id as string;
    assert.equal((await post(zone, { type: "A", name: "www", content: "203.0.113.44" })).status, 200);
    await p.stop();
    await start();
    assert.deepEqual(
      (await udpQuery(port, "www.nom.br", "A")).answers?.map((a: any) => a.data),
      ["203.0.113.44"],
    );
    assert.equal((await post(zone, { type: "TXT", name: "still", content: "editable" })).status, 200);
    refused(await createZone("nom.br", accountB), 1099);
  });
});
