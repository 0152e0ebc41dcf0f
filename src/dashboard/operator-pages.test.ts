import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import type { Browser, Page } from "playwright-core";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";
import { eventually } from "../core/testing/eventually.js";
import { startScriptedOrigin } from "../edge/cache/testing/origin.js";
import { loopbackBlock, testCertificates } from "../edge/testing/origins.js";
import { createAccount, hit, uploadScript } from "../workers/testing/helpers.js";
import { MARKUP, SKIP_WITHOUT_CHROMIUM, accessibilityViolations as axeViolations, openBrowser, signIn } from "./testing/browser.js";

/** A Worker whose Durable Object class keeps a counter in its storage (so the object is listed as having data). */
const COUNTER_WORKER = `import { DurableObject } from "cloudflare:workers";
export class Counter extends DurableObject {
  async fetch() {
    const n = ((await this.ctx.storage.get("n")) ?? 0) + 1;
    await this.ctx.storage.put("n", n);
    return new Response(String(n));
  }
}
export default { fetch(req, env) { return env.COUNTER.get(env.COUNTER.idFromName("a")).fetch(req); } };`;
const COUNTER_METADATA = {
  bindings: [{ type: "durable_object_namespace", name: "COUNTER", class_name: "Counter" }],
  migrations: { new_tag: "v1", steps: [{ new_sqlite_classes: ["Counter"] }] },
};

/**
 * The dashboard's operator pages (D1, Queues, Durable Objects, zone settings, cache purge, certificates) in a real
 * chromium against a real platform with two accounts: account A signs in and sees its own, never account B's; what
 * a page changes is what the v4 API then answers; every page passes axe-core without serious violations.
 */
describe("the dashboard's operator pages in a real browser", { skip: SKIP_WITHOUT_CHROMIUM }, () => {
  const addr = loopbackBlock();
  const cleanups: (() => unknown)[] = [];
  const hooks = { after: (fn: () => unknown) => void cleanups.push(fn) };
  const shots = mkdtempSync(join(tmpdir(), "dash-operator-shots-"));
  let p: TestPlatform;
  let origin: Awaited<ReturnType<typeof startScriptedOrigin>>;
  let browser: Browser;
  let page: Page;
  let pageErrors: string[] = [];
  let accountB = "";
  let zoneA = "";
  let zoneB = "";
  let dbA = "";
  let dbB = "";
  let queueA = "";
  const asB = () => p.keyHeaders();

  before(async () => {
    origin = await startScriptedOrigin(hooks, addr(1));
    p = await startTestPlatform({
      args: [
        ...["--dns-port", "0", "--origin-allow", "127.0.0.0/8", "--edge-tls-port", "0"],
        // Never reached: the zone's edge certificate stays pending (its pack says why); custom ones are stored.
        ...["--acme-directory", "https://127.0.0.1:9/directory"],
      ],
    });
    accountB = await createAccount(p, "dash-b");
    const must = async (r: Promise<{ status: number; body: any }>) => {
      const res = await r;
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.result;
    };
    zoneA = (await must(p.api("POST", "/zones", { name: "dash-a.example", account: { id: p.accountId } }))).id;
    await must(p.api("POST", `/zones/${zoneA}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true }));
    zoneB = (await must(p.api("POST", "/zones", { name: "dash-b-secret.example", account: { id: accountB } }, asB()))).id;
    dbA = (await must(p.api("POST", `/accounts/${p.accountId}/d1/database`, { name: "a-notes" }))).uuid;
    dbB = (await must(p.api("POST", `/accounts/${accountB}/d1/database`, { name: "b-secret-db" }, asB()))).uuid;
    queueA = (await must(p.api("POST", `/accounts/${p.accountId}/queues`, { queue_name: "a-jobs" }))).queue_id;
    for (const n of [1, 2]) await must(p.api("POST", `/accounts/${p.accountId}/queues/${queueA}/messages`, { body: { job: n } }));
    await must(p.api("POST", `/accounts/${p.accountId}/queues/${queueA}/consumers`, { type: "http_pull" }));
    await must(p.api("POST", `/accounts/${accountB}/queues`, { queue_name: "b-secret-queue" }, asB()));
    assert.equal((await uploadScript(p, "a-counter", COUNTER_WORKER, COUNTER_METADATA)).status, 200);
    const upB = await uploadScript(p, "b-secret-counter", COUNTER_WORKER, COUNTER_METADATA, { accountId: accountB, headers: asB() });
    assert.equal(upB.status, 200, JSON.stringify(upB.body));
    assert.equal((await hit(p, "a-counter", "/")).text, "1");
    assert.equal((await hit(p, "b-secret-counter", "/")).text, "1");

    ({ browser, page, pageErrors } = await openBrowser({ viewport: { width: 1280, height: 900 } }));
    await signIn(page, p.url, p.token, { home: true });
  });
  after(async () => {
    await browser?.close();
    await p?.dispose();
    for (const fn of cleanups) await fn();
  });

  const apiA = (method: string, path: string, body?: unknown) => p.api(method, `/accounts/${p.accountId}${path}`, body);
  const open = async (hash: string, ready: string) => {
    await page.goto(`${p.url}/dash/#/${hash}`);
    await page.waitForSelector(ready);
  };
  /** The alert box's text once it shows a message of `kind` ("error" or "info"). */
  const alertText = async (kind = "error") => {
    await page.waitForSelector(`#alert.${kind}:not([hidden])`);
    return (await page.textContent("#alert")) ?? "";
  };
  /** Follows the picker's link to zone A's page, which shows `ready` (else the test fails with what it shows instead). */
  const openZonePage = async (ready: string) => {
    await page.click("a:text-is('dash-a.example')");
    await page.waitForSelector("main h1:has-text('dash-a.example'), main > p:not(.muted)");
    assert.equal(await page.locator(ready).count(), 1, await mainText());
  };
  /** The page's text: what the visitor can read (markup from the API would show here as text, never as elements). */
  const mainText = async () => (await page.textContent("main")) ?? "";

  const accessibilityViolations = () => axeViolations(page);

  /**
   * A screenshot of `selector`, decoded again in the browser: its size, the share of dark (text) pixels and of the
   * error colours (#fee2e2 behind #991b1b): what the picture shows, not only that one was taken.
   */
  const screenshot = async (selector: string, name: string) => {
    const path = join(shots, `${name}.png`);
    const png = await page.locator(selector).screenshot({ path });
    return (await page.evaluate(`(async (b64) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        const bmp = await createImageBitmap(new Blob([bytes], { type: "image/png" }));
        const c = new OffscreenCanvas(bmp.width, bmp.height);
        const ctx = c.getContext("2d");
        ctx.drawImage(bmp, 0, 0);
        const d = ctx.getImageData(0, 0, bmp.width, bmp.height).data;
        let dark = 0, errorBg = 0, errorText = 0;
        for (let i = 0; i < d.length; i += 4) {
          if (d[i] < 110 && d[i + 1] < 110 && d[i + 2] < 110) dark++;
          if (d[i] > 120 && d[i + 1] < 60 && d[i + 2] < 60) errorText++;
          if (Math.abs(d[i] - 0xfe) < 4 && Math.abs(d[i + 1] - 0xe2) < 4 && Math.abs(d[i + 2] - 0xe2) < 4) errorBg++;
        }
        const n = d.length / 4;
        return { width: bmp.width, height: bmp.height, dark: dark / n, errorBg: errorBg / n, errorText: errorText / n };
      })(${JSON.stringify(png.toString("base64"))})`)) as { width: number; height: number; dark: number; errorBg: number; errorText: number };
  };

  it("D1: lists A's databases only, runs SQL and shows the rows as text, shows a failed query's error, lists the tables", async () => {
    await open("d1", "a:text-is('a-notes')");
    assert.ok(!(await mainText()).includes("b-secret-db"), "account B's database is not listed");
    assert.deepEqual(await accessibilityViolations(), [], "the D1 list");

    await page.fill("form[name=create-database] input[name=name]", "a-created");
    await page.click("form[name=create-database] button");
    await page.waitForSelector("a:text-is('a-created')");
    const names = (await apiA("GET", "/d1/database")).body.result.map((d: { name: string }) => d.name).sort();
    assert.deepEqual(names, ["a-created", "a-notes"]);

    await page.click("a:text-is('a-notes')");
    await page.waitForSelector("form[name=query]");
    assert.equal(await page.textContent("#tables-title + p"), "No tables yet.");
    await page.fill(
      "form[name=query] textarea[name=sql]",
      `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('${MARKUP}'), (NULL);`,
    );
    await page.click("form[name=query] button");
    await page.waitForSelector("#query-result .statement");
    assert.match((await page.textContent("#query-result")) ?? "", /0 rows returned, 2 written/);
    const stored = await apiA("POST", `/d1/database/${dbA}/query`, { sql: "SELECT count(*) AS n FROM notes" });
    assert.equal(stored.body.result[0].results[0].n, 2, "the page's statements ran in the database");

    await page.fill("form[name=query] textarea[name=sql]", "SELECT id, body FROM notes ORDER BY id");
    await page.click("form[name=query] button");
    await page.waitForSelector("#query-result table");
    assert.deepEqual(await page.locator("#query-result thead th").allTextContents(), ["id", "body"]);
    assert.deepEqual(await page.locator("#query-result tbody tr").allTextContents(), [`1${MARKUP}`, "2NULL"]);
    assert.equal(await page.locator("main img").count(), 0, "a value with markup is text");
    assert.equal(await page.evaluate("window.__injected"), undefined);
    const rows = await screenshot("#query-result", "d1-rows");
    assert.ok(rows.height >= 60 && rows.dark > 0.002, `the result table is drawn with its text (${JSON.stringify(rows)})`);

    await page.fill("form[name=query] textarea[name=sql]", "SELECT * FROM missing_table");
    await page.click("form[name=query] button");
    await page.waitForSelector("#query-error");
    assert.match((await page.textContent("#query-error")) ?? "", /^The query failed: .*no such table: missing_table.*\(code \d+\)/);
    assert.equal(await page.getAttribute("#query-error", "role"), "alert");
    const failed = await screenshot("#query-result", "d1-error");
    assert.ok(failed.errorBg > 0.3 && failed.errorText > 0.005, `the error is shown in the error colour with its text (${JSON.stringify(failed)})`);
    assert.deepEqual(await accessibilityViolations(), [], "a database's page with a failed query");

    // The table list is a query of the same API; "Show rows" runs a SELECT of that table.
    await page.reload();
    await page.waitForSelector("td:text-is('notes')");
    await page.click("button[aria-label='Show rows of notes']");
    await page.waitForSelector("#query-result table");
    assert.equal(await page.locator("#query-result tbody tr").count(), 2);
    assert.equal(await page.inputValue("form[name=query] textarea[name=sql]"), 'SELECT * FROM "notes" LIMIT 100');

    // Account B's database by its id: the API's 404, nothing of it.
    await page.goto(`${p.url}/dash/#/d1/${dbB}`);
    await page.waitForSelector("main p:has-text('code')");
    assert.match(await mainText(), /\(code \d+\)/);
    assert.ok(!(await mainText()).includes("b-secret-db"));
    assert.equal(await page.locator("form[name=query]").count(), 0);
  });

  it("Queues: lists A's queues with their backlog and consumers, never B's; creates one through the form", async () => {
    await open("queues", "td:text-is('a-jobs')");
    const row = (await page.textContent("tr:has(td:text-is('a-jobs'))")) ?? "";
    assert.match(row, /2 messages, \d+ B/);
    assert.match(row, /HTTP pull \(batch \d+, \d+ retries\)/);
    const metrics = (await apiA("GET", `/queues/${queueA}/metrics`)).body.result;
    assert.equal(metrics.backlog_count, 2, "the page shows what the API holds");
    assert.ok(!(await mainText()).includes("b-secret-queue"), "account B's queue is not listed");
    assert.deepEqual(await accessibilityViolations(), [], "the Queues page");
    const shot = await screenshot("main table", "queues");
    assert.ok(shot.dark > 0.002, `the queues table is drawn (${JSON.stringify(shot)})`);

    await page.fill("form[name=create-queue] input[name=queue_name]", "Not Valid!");
    await page.click("form[name=create-queue] button");
    assert.match(await alertText(), /\(code \d+\)/);
    await page.fill("form[name=create-queue] input[name=queue_name]", "a-created-queue");
    await page.click("form[name=create-queue] button");
    await page.waitForSelector("td:text-is('a-created-queue')");
    const listed = (await apiA("GET", "/queues")).body.result.map((q: { queue_name: string }) => q.queue_name).sort();
    assert.deepEqual(listed, ["a-created-queue", "a-jobs"], "the refused name left nothing behind");
  });

  it("Durable Objects: lists A's namespaces and their objects, never B's", async () => {
    await open("durable-objects", "a:text-is('a-counter_Counter')");
    assert.ok(!(await mainText()).includes("b-secret-counter"), "account B's namespace is not listed");
    assert.match((await page.textContent("tr:has(a:text-is('a-counter_Counter'))")) ?? "", /a-counter.*Counter.*SQLite/);
    assert.deepEqual(await accessibilityViolations(), [], "the Durable Objects page");
    await page.click("a:text-is('a-counter_Counter')");
    await page.waitForSelector("h1:text-is('Objects of a-counter_Counter')");
    const ns = (await apiA("GET", "/workers/durable_objects/namespaces")).body.result.find((n: { script: string }) => n.script === "a-counter");
    const objects = (await apiA("GET", `/workers/durable_objects/namespaces/${ns.id}/objects`)).body.result.map((o: { id: string }) => o.id);
    assert.equal(objects.length, 1);
    assert.deepEqual(await page.locator("main tbody td:first-child").allTextContents(), objects);
    assert.deepEqual(await accessibilityViolations(), [], "a namespace's objects");

    const nsB = (await p.api("GET", `/accounts/${accountB}/workers/durable_objects/namespaces`, undefined, asB())).body.result[0];
    await page.goto(`${p.url}/dash/#/durable-objects/${nsB.id}`);
    await page.waitForSelector("main p:has-text('code')");
    assert.equal(await page.locator("main table").count(), 0, "B's objects are not shown");
  });

  it("zone settings: the page shows what the API holds, and a setting edited on the page is what the API then answers", async () => {
    await open("zone-settings", "a:text-is('dash-a.example')");
    assert.ok(!(await mainText()).includes("dash-b-secret.example"), "account B's zone is not offered");
    assert.deepEqual(await accessibilityViolations(), [], "the zone picker");
    await openZonePage("form[name=zone-settings]");
    const before = (await p.api("GET", `/zones/${zoneA}/settings`)).body.result as { id: string; value: unknown; editable: boolean }[];
    for (const s of before) assert.equal(await page.inputValue(`[name=${s.id}]`), String(s.value), s.id);
    assert.equal(await page.isDisabled("select[name=always_use_https]"), false);
    assert.deepEqual(await accessibilityViolations(), [], "the zone settings page");

    await page.selectOption("select[name=always_use_https]", "on");
    await page.selectOption("select[name=cache_level]", "basic");
    await page.selectOption("select[name=browser_cache_ttl]", { label: "1 hour" });
    await page.click("form[name=zone-settings] button[type=submit]");
    assert.match(await alertText("info"), /Saved: always_use_https, browser_cache_ttl, cache_level/);
    const after = new Map(((await p.api("GET", `/zones/${zoneA}/settings`)).body.result as { id: string; value: unknown }[]).map((s) => [s.id, s.value]));
    assert.equal(after.get("always_use_https"), "on");
    assert.equal(after.get("cache_level"), "basic");
    assert.equal(after.get("browser_cache_ttl"), 3600, "a number stays a number");
    await page.waitForSelector("tr[data-setting=cache_level] td.muted:has-text('changed')");
    assert.equal(await page.inputValue("select[name=cache_level]"), "basic", "the page shows the stored value again");
    const shot = await screenshot("form[name=zone-settings]", "zone-settings");
    assert.ok(shot.height > 200 && shot.dark > 0.002, `the settings table is drawn (${JSON.stringify(shot)})`);

    // The purge test fetches over plain HTTP: Always Use HTTPS would redirect it.
    assert.equal((await p.api("PATCH", `/zones/${zoneA}/settings/always_use_https`, { value: "off" })).status, 200);

    // B's zone by its id: the API's 404; no settings of it.
    await page.goto(`${p.url}/dash/#/zone-settings/${zoneB}`);
    await page.waitForSelector("main p:has-text('code')");
    assert.equal(await page.locator("form[name=zone-settings]").count(), 0);
  });

  it("cache purge: each form sends the hosted purge_cache call for the zone, and the purged answer is fetched again", async () => {
    origin.route("/app.js", (_req, res) => res.writeHead(200, { "content-type": "text/javascript", "cache-tag": "bundle" }).end("js"));
    const port = new URL(p.url).port;
    const get = async () => {
      const r = await request(`http://127.0.0.1:${port}/app.js`, { headers: { host: "www.dash-a.example" } });
      await r.body.dump();
      return r.headers["cf-cache-status"];
    };
    const cached = async () => {
      await get();
      await eventually(async () => (await get()) === "HIT", "the script is cached");
    };
    await open("cache", "a:text-is('dash-a.example')");
    assert.ok(!(await mainText()).includes("dash-b-secret.example"), "account B's zone is not offered");
    await openZonePage("form[name=purge-urls]");
    assert.deepEqual(await accessibilityViolations(), [], "the cache page");
    const page1 = await screenshot("body", "cache-page");
    assert.ok(page1.dark > 0.002 && page1.errorBg === 0, `the cache page is drawn, with no error (${JSON.stringify(page1)})`);

    /** The next purge_cache call of the page, once answered (the purge is then done on every node). */
    const nextPurge = () => page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith(`/zones/${zoneA}/purge_cache`));
    /** The page's count of finished renders (a done purge re-renders the page). */
    const rendered = () => page.getAttribute("#main", "data-rendered");
    /** Waits for the render after `before` to finish: text typed into the page it replaces would be lost. */
    const renderedAfter = (before: string | null) =>
      // A string: the compiler knows no DOM (tsconfig's lib is ES2023); Playwright calls the function it evaluates to.
      page.waitForFunction(
        `(b) => {
        const main = document.getElementById("main");
        return main.dataset.rendered !== b && !main.hasAttribute("aria-busy");
      }`,
        before,
      );
    /** Submits `formName` with `text` and answers the body of the purge_cache call the page sent. */
    const purgeWith = async (formName: string, text: string, { refused = false } = {}) => {
      await page.waitForSelector("#main:not([aria-busy])");
      const before = await rendered();
      const answered = nextPurge();
      await page.fill(`form[name=${formName}] textarea[name=items]`, text);
      await page.click(`form[name=${formName}] button`);
      const body = (await answered).request().postDataJSON();
      if (!refused) await renderedAfter(before);
      return body;
    };

    await cached();
    assert.deepEqual(await purgeWith("purge-urls", " http://www.dash-a.example/app.js \n\n"), { files: ["http://www.dash-a.example/app.js"] });
    assert.match(await alertText("info"), /Purge URLs: done/);
    assert.equal(await get(), "MISS", "the URL was purged");

    await cached();
    assert.deepEqual(await purgeWith("purge-tags", "bundle\nother"), { tags: ["bundle", "other"] });
    assert.equal(await get(), "MISS", "the tag was purged");

    await cached();
    assert.deepEqual(await purgeWith("purge-hosts", "www.dash-a.example"), { hosts: ["www.dash-a.example"] });
    assert.equal(await get(), "MISS", "the host was purged");

    await cached();
    assert.deepEqual(await purgeWith("purge-prefixes", "www.dash-a.example/app"), { prefixes: ["www.dash-a.example/app"] });
    assert.equal(await get(), "MISS", "the prefix was purged");

    await cached();
    const beforeEverything = await rendered();
    const everything = nextPurge();
    page.once("dialog", (d) => void d.accept());
    await page.click("button:text-is('Purge everything')");
    assert.deepEqual((await everything).request().postDataJSON(), { purge_everything: true });
    assert.match(await alertText("info"), /Purged everything cached for dash-a\.example/);
    await renderedAfter(beforeEverything);
    assert.equal(await get(), "MISS", "everything was purged");

    // A host outside the zone: the API's refusal, shown as it says it.
    await purgeWith("purge-hosts", "www.dash-b-secret.example", { refused: true });
    assert.match(await alertText(), /not in the zone dash-a\.example.*\(code \d+\)/);
    const shot = await screenshot("#alert", "purge-refused");
    assert.ok(shot.errorBg > 0.3 && shot.errorText > 0.005, `the refusal is shown as an error (${JSON.stringify(shot)})`);

    await page.goto(`${p.url}/dash/#/cache/${zoneB}`);
    await page.waitForSelector("main p:has-text('code')");
    assert.equal(await page.locator("form[name=purge-urls]").count(), 0, "no purge form for B's zone");
  });

  it("certificates: lists the zone's packs and custom certificates, uploads one (the key is never shown again) and deletes it", async () => {
    const certs = testCertificates(["dash-a.example", "*.dash-a.example"]);
    cleanups.push(() => certs.dispose());
    await open("certificates", "a:text-is('dash-a.example')");
    assert.ok(!(await mainText()).includes("dash-b-secret.example"), "account B's zone is not offered");
    await openZonePage("form[name=upload-certificate]");
    const packs = (await p.api("GET", `/zones/${zoneA}/ssl/certificate_packs`)).body.result as { hosts: string[] }[];
    for (const pack of packs) assert.ok(await page.isVisible(`td:text-is('${pack.hosts.join(", ")}')`), "each pack the API lists is shown");
    assert.ok(await page.isVisible("text=No custom certificates."));
    assert.deepEqual(await accessibilityViolations(), [], "the certificates page");

    await page.fill("form[name=upload-certificate] textarea[name=certificate]", "not a certificate");
    await page.fill("form[name=upload-certificate] textarea[name=private_key]", certs.signed.key);
    await page.click("form[name=upload-certificate] button");
    assert.match(await alertText(), /\(code \d+\)/);
    assert.equal((await p.api("GET", `/zones/${zoneA}/custom_certificates`)).body.result.length, 0, "the refused upload stored nothing");

    await page.fill("form[name=upload-certificate] textarea[name=certificate]", certs.signed.cert);
    await page.click("form[name=upload-certificate] button");
    // The edge certificate's row names the same hosts: the custom certificates' table is the one to wait for.
    await page.waitForSelector("section[aria-labelledby=custom-title] td:text-is('dash-a.example, *.dash-a.example')");
    const listed = (await p.api("GET", `/zones/${zoneA}/custom_certificates`)).body.result;
    assert.equal(listed.length, 1);
    assert.deepEqual(listed[0].hosts, ["dash-a.example", "*.dash-a.example"]);
    const keyBody = certs.signed.key.split("\n")[1];
    assert.ok((await page.inputValue("form[name=upload-certificate] textarea[name=private_key]")) === "", "the form is empty again");
    assert.ok(!(await page.content()).includes(keyBody), "the private key is nowhere on the page");
    const shot = await screenshot("main", "certificates");
    assert.ok(shot.dark > 0.002, `the certificates page is drawn (${JSON.stringify(shot)})`);

    page.once("dialog", (d) => void d.accept());
    await page.click("tr:has(td:text-is('dash-a.example, *.dash-a.example')) button:text-is('Delete')");
    await page.waitForSelector("text=No custom certificates.");
    assert.equal((await p.api("GET", `/zones/${zoneA}/custom_certificates`)).body.result.length, 0);

    await page.goto(`${p.url}/dash/#/certificates/${zoneB}`);
    await page.waitForSelector("main p:has-text('code')");
    assert.equal(await page.locator("form[name=upload-certificate]").count(), 0, "nothing of B's zone");
  });

  it("with a read-only token the pages show what it may read, and every change is refused with the API's reason", async () => {
    // The overview counts zones, namespaces, buckets, scripts and gateways: reading those too.
    const permissions = [
      "d1_read",
      "queues_read",
      "workers_read",
      "zone_settings_read",
      "dns_read",
      "kv_read",
      "r2_read",
      "ai_gateway_read",
      "account_settings_read",
    ];
    const made = await p.api("POST", `/accounts/${p.accountId}/tokens`, { name: "dash-viewer", permissions });
    assert.equal(made.status, 200, JSON.stringify(made.body));
    await page.click("#sign-out");
    await page.fill("form[name=sign-in] input[name=token]", made.body.result.value);
    await page.click("form[name=sign-in] button");
    await page.waitForSelector(".cards");

    // Listing tables and running SQL are D1 edit in the API: the page says so and keeps the rest.
    await open(`d1/${dbA}`, "#tables-refused");
    assert.match((await page.textContent("#tables-refused")) ?? "", /^Tables are not listed: .*\(code \d+\)/);
    await page.fill("form[name=query] textarea[name=sql]", "DELETE FROM notes");
    await page.click("form[name=query] button");
    await page.waitForSelector("#query-error");
    assert.match((await page.textContent("#query-error")) ?? "", /\(code 10000\)/);
    assert.equal((await apiA("POST", `/d1/database/${dbA}/query`, { sql: "SELECT count(*) AS n FROM notes" })).body.result[0].results[0].n, 2);

    await open(`zone-settings/${zoneA}`, "form[name=zone-settings]");
    await page.selectOption("select[name=websockets]", "off");
    await page.click("form[name=zone-settings] button[type=submit]");
    assert.match(await alertText(), /\(code 10000\)/);
    const websockets = (await p.api("GET", `/zones/${zoneA}/settings/websockets`)).body.result.value;
    assert.equal(websockets, "on", "the refused change was not written");

    await open("queues", "td:text-is('a-jobs')");
    await page.fill("form[name=create-queue] input[name=queue_name]", "not-allowed");
    await page.click("form[name=create-queue] button");
    assert.match(await alertText(), /\(code 10000\)/);
    await page.click("#sign-out");
  });

  it("a page name from the hash is never an inherited property; no page threw", async () => {
    await page.fill("form[name=sign-in] input[name=token]", p.token);
    await page.click("form[name=sign-in] button");
    await page.waitForSelector(".cards");
    await page.goto(`${p.url}/dash/#/constructor`);
    await page.waitForSelector(".cards");
    await page.goto(`${p.url}/dash/#/__proto__/x`);
    await page.waitForSelector(".cards");
    assert.deepEqual(pageErrors, []);
  });
});
