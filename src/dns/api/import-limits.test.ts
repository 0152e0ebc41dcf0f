import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { startDnsPlatform } from "../testing/helpers.js";
import { MAX_IMPORT_RECORDS } from "../zones/bind.js";

describe("zone file import under hostile input (two accounts)", () => {
  let p: TestPlatform;
  let zoneA: string;
  let zoneB: string;
  let accountB: string;

  before(async () => {
    ({ p } = await startDnsPlatform());
    const second = await p.api("POST", "/accounts", { name: "Second" }, p.keyHeaders());
    accountB = second.body.result.id as string;
    zoneA = (await p.api("POST", "/zones", { name: "import-a.example", account: { id: p.accountId } }, p.keyHeaders())).body.result.id;
    zoneB = (await p.api("POST", "/zones", { name: "import-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
  });
  after(() => p?.dispose());

  const importFile = async (zone: string, file: string) => {
    const form = new FormData();
    form.append("file", new Blob([file]), "zone.txt");
    const res = await fetch(`${p.apiUrl}/zones/${zone}/dns_records/import`, { method: "POST", headers: p.keyHeaders(), body: form });
    return { status: res.status, body: (await res.json()) as any };
  };
  const count = async (zone: string) => (await p.api("GET", `/zones/${zone}/dns_records?per_page=1`, undefined, p.keyHeaders())).body.result_info.total_count;

  it("refuses a file of more records than one import takes, writing none of them", async () => {
    const lines = Array.from({ length: MAX_IMPORT_RECORDS + 1 }, (_, i) => `h${i} 300 IN A 203.0.113.${(i % 250) + 1}`);
    const res = await importFile(zoneA, lines.join("\n"));
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(JSON.stringify(res.body.errors), new RegExp(`at most ${MAX_IMPORT_RECORDS} records`));
    assert.equal(await count(zoneA), 0);
    // Exactly the limit goes in.
    const ok = await importFile(zoneA, lines.slice(0, MAX_IMPORT_RECORDS).join("\n"));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.result.recs_added, MAX_IMPORT_RECORDS);
  });

  it("never reads a server file, expands no $GENERATE, and writes nothing into another account's zone", async () => {
    for (const file of [
      "$INCLUDE /etc/passwd\n",
      "$INCLUDE /etc/passwd import-b.example.\n",
      "$GENERATE 1-4294967295 host$ A 203.0.113.1\n",
      // Another account's zone reached through $ORIGIN, an absolute owner, and a delegation.
      "$ORIGIN import-b.example.\nwww 300 IN A 203.0.113.9\n",
      "www.import-b.example. 300 IN A 203.0.113.9\n",
      "import-b.example. 300 IN NS ns.evil.example.\n",
    ]) {
      const res = await importFile(zoneA, `ok 300 IN TXT "first"\n${file}`);
      assert.equal(res.status, 400, `${file}: ${JSON.stringify(res.body)}`);
      assert.doesNotMatch(JSON.stringify(res.body), /root:/);
    }
    assert.equal(await count(zoneB), 0, "account B's zone is untouched");
    const recs = (await p.api("GET", `/zones/${zoneA}/dns_records?name=ok.import-a.example`, undefined, p.keyHeaders())).body.result;
    assert.equal(recs.length, 0, "nothing of a refused import is written");
  });

  it("refuses enormous entries, deep parentheses, oversized records and endless blank lines with a 400; reads \\DDD escapes", async () => {
    for (const file of [
      `big 300 IN TXT "${"x".repeat(4 * 1024 * 1024)}"\n`,
      `words 300 IN TXT ${'"a" '.repeat(200_000)}\n`,
      `deep 300 IN TXT ${"(".repeat(100_000)}"a"${")".repeat(100_000)}\n`,
      `deep2 300 IN TXT ${"(".repeat(100_000)}\n`,
      "\n".repeat(2_000_000),
      // Within an entry's length, over a record's 4,096 wire bytes.
      `wide 300 IN TXT "${"y".repeat(5000)}"\n`,
    ]) {
      const res = await importFile(zoneA, file);
      assert.equal(res.status, 400, `${file.slice(0, 40)}: ${JSON.stringify(res.body).slice(0, 300)}`);
    }
    for (const file of [`esc 300 IN TXT "\\065\\\\\\""\n`, `$ORIGIN .\nroot 300 IN A 203.0.113.7\n`, `$TTL 99999999999999999999999\nttl IN A 203.0.113.6\n`]) {
      const res = await importFile(zoneA, file);
      assert.ok(res.status === 200 || res.status === 400, `${file}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    }
  });

  it("refuses a record over 4,096 bytes on the wire through the API too (it was stored, then served)", async () => {
    const post = (content: string) => p.api("POST", `/zones/${zoneA}/dns_records`, { type: "TXT", name: "size", content }, p.keyHeaders());
    const huge = await post("z".repeat(1024 * 1024));
    assert.equal(huge.status, 400, JSON.stringify(huge.body).slice(0, 300));
    const over = await post("z".repeat(4096));
    assert.equal(over.status, 400, JSON.stringify(over.body).slice(0, 300));
    // 4,096 bytes split into 17 strings is 4,113 bytes on the wire; 4,000 bytes in 16 strings is 4,016.
    const fits = await post("z".repeat(4000));
    assert.equal(fits.status, 200, JSON.stringify(fits.body).slice(0, 300));
  });

  it("exports a record holding a line break as \\010, so the file read back adds no record of its own", async () => {
    const made = await p.api("POST", `/zones/${zoneB}/dns_records`, { type: "TXT", name: "nl", content: '"a\nevil 300 IN A 203.0.113.66"' }, p.keyHeaders());
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const exported = await (await fetch(`${p.apiUrl}/zones/${zoneB}/dns_records/export`, { headers: p.keyHeaders() })).text();
    assert.ok(!exported.split("\n").some((line) => line.startsWith("evil")), exported);
    assert.match(exported, /"a\\010evil 300 IN A 203\.0\.113\.66"/);
    const again = await importFile(zoneB, exported);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    const names = (await p.api("GET", `/zones/${zoneB}/dns_records?per_page=100`, undefined, p.keyHeaders())).body.result.map((r: any) => r.name);
    assert.ok(!names.some((n: string) => n.startsWith("evil")), names.join(" "));
  });
});
