import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import type { Browser, Page } from "playwright-core";
import { callGateway, chatBody, startGatewayPlatform } from "../ai-gateway/testing/helpers.js";
import { startMockProvider, type MockProvider } from "../ai-gateway/testing/mock-provider.js";
import type { TestPlatform } from "../core/testing/platform.js";
import { hit, uploadScript } from "../workers/testing/helpers.js";
import { udpQuery } from "../dns/testing/helpers.js";
import { MARKUP, SKIP_WITHOUT_CHROMIUM, accessibilityViolations as axeViolations, openBrowser, signIn as signInAs } from "./testing/browser.js";

describe("the dashboard in a real browser", { skip: SKIP_WITHOUT_CHROMIUM }, () => {
  let p: TestPlatform;
  let provider: MockProvider;
  let browser: Browser;
  let page: Page;
  let pageErrors: string[] = [];

  before(async () => {
    provider = await startMockProvider();
    p = await startGatewayPlatform([`openai=${provider.url}`]);
    ({ browser, page, pageErrors } = await openBrowser());
  });
  after(async () => {
    await browser?.close();
    await p?.dispose();
    await provider?.close();
  });

  const signIn = (token: string) => signInAs(page, p.url, token);
  const api = (method: string, path: string, body?: unknown) => p.api(method, `/accounts/${p.accountId}${path}`, body);
  /** The error the page shows next (a success's "done" may still be shown when the next form is sent). */
  const alertText = async () => {
    await page.waitForSelector("#alert.error:not([hidden])");
    return (await page.textContent("#alert")) ?? "";
  };

  it("is served with a policy that allows only its own scripts and no framing", async () => {
    const root = await request(`${p.url}/`);
    assert.equal(root.statusCode, 302);
    assert.equal(root.headers.location, "/dash/");
    await root.body.dump();
    const res = await request(`${p.url}/dash/`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers["content-type"]), /text\/html/);
    const csp = String(res.headers["content-security-policy"]);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(res.headers["x-frame-options"], "DENY");
    const again = await request(`${p.url}/dash/`, { headers: { "if-none-match": String(res.headers.etag) } });
    assert.equal(again.statusCode, 304);
    await Promise.all([res.body.dump(), again.body.dump()]);
  });

  it("refuses a wrong token with the API's reason and shows nothing of the account", async () => {
    await signIn("not-a-real-token");
    assert.match(await alertText(), /Sign-in failed: .*\(code \d+\)/);
    assert.equal(await page.isHidden("#nav"), true);
    assert.equal(await page.evaluate("sessionStorage.length"), 0, "a refused token is not kept");
  });

  it("signs in with an API token kept only for the tab, and counts what the account holds", async () => {
    const zone = await p.api("POST", "/zones", { name: "counted.test", account: { id: p.accountId } });
    assert.equal(zone.status, 200);
    await signIn(p.token);
    await page.waitForSelector(".cards");
    assert.equal((await page.textContent("[data-count='DNS zones'] .n"))?.trim(), "1");
    assert.equal(await page.evaluate("localStorage.length"), 0);
    assert.equal(await page.evaluate("document.cookie"), "");
    assert.ok(!page.url().includes(p.token));
  });

  it("DNS: adds a record through the form, refuses an invalid one with the API's message, edits one, deletes one", async () => {
    await page.click("a[href='#/dns']");
    await page.fill("form[name=create-zone] input[name=name]", "example.com");
    await page.click("form[name=create-zone] button");
    await page.click("a:text-is('example.com')");
    await page.waitForSelector("form[name=create-record]");
    await page.fill("form[name=create-record] input[name=name]", "www.example.com");
    await page.fill("form[name=create-record] input[name=content]", "198.51.100.10");
    await page.click("form[name=create-record] button");
    await page.waitForSelector("td:text-is('198.51.100.10')");

    const zones = await p.api("GET", "/zones?name=example.com");
    const zoneId = zones.body.result[0].id;
    const records = async () => (await p.api("GET", `/zones/${zoneId}/dns_records`)).body.result as { name: string; content: string }[];
    assert.deepEqual(
      (await records()).map((r) => [r.name, r.content]),
      [["www.example.com", "198.51.100.10"]],
    );

    await page.fill("form[name=create-record] input[name=name]", "bad.example.com");
    await page.fill("form[name=create-record] input[name=content]", "not-an-address");
    await page.click("form[name=create-record] button");
    assert.match(await alertText(), /valid IPv4 address.*\(code 9005\)/);
    assert.equal((await records()).length, 1, "the refused record was not written");

    await page.click("tr:has(td:text-is('198.51.100.10')) button:text-is('Edit')");
    assert.equal(await page.inputValue("form[name=edit-record] input[name=name]"), "www.example.com");
    assert.equal(await page.inputValue("form[name=edit-record] select[name=type]"), "A");
    await page.fill("form[name=edit-record] input[name=content]", "198.51.100.20");
    await page.click("form[name=edit-record] button");
    await page.waitForSelector("td:text-is('198.51.100.20')");
    assert.equal(await page.locator("#edit-record").count(), 0, "the editor closes after saving");
    assert.deepEqual(
      (await records()).map((r) => [r.name, r.content]),
      [["www.example.com", "198.51.100.20"]],
    );

    page.once("dialog", (d) => void d.accept());
    await page.click("tr:has(td:text-is('198.51.100.20')) button:text-is('Delete')");
    await page.waitForSelector("text=No records yet.");
    assert.equal((await records()).length, 0);
  });

  it("a list longer than one page says that it shows only the first page", async () => {
    const zone = await p.api("POST", "/zones", { name: "many.test", account: { id: p.accountId } });
    const posts = Array.from({ length: 101 }, (_, i) => ({ type: "A", name: `h${i}.many.test`, content: "198.51.100.1", ttl: 1 }));
    assert.equal((await p.api("POST", `/zones/${zone.body.result.id}/dns_records/batch`, { posts })).status, 200);
    await page.goto(`${p.url}/dash/#/dns/${zone.body.result.id}`);
    await page.waitForSelector("#more");
    assert.match((await page.textContent("#more")) ?? "", /Showing the first 100/);
    assert.equal(await page.locator("main > table > tbody > tr").count(), 100);
    await page.goto(`${p.url}/dash/#/dns`);
    await page.waitForSelector("a:text-is('many.test')");
    assert.equal(await page.locator("#more").count(), 0, "a list that fits says nothing");
  });

  it("KV: keys and values that contain markup are shown as text, never run", async () => {
    const ns = await api("POST", "/storage/kv/namespaces", { title: "markup" });
    const nsId = ns.body.result.id;
    const put = await request(`${p.apiUrl}/accounts/${p.accountId}/storage/kv/namespaces/${nsId}/values/${encodeURIComponent(MARKUP)}`, {
      method: "PUT",
      headers: p.headers(),
      body: `<script>window.__injected=2</script>${MARKUP}`,
    });
    assert.equal(put.statusCode, 200);
    await put.body.dump();
    await page.goto(`${p.url}/dash/#/kv`);
    await page.click("a:text-is('markup')");
    await page.click(`a:text-is('${MARKUP}')`);
    await page.waitForSelector("#kv-value");
    assert.equal(await page.textContent("#kv-value"), `<script>window.__injected=2</script>${MARKUP}`);
    assert.equal(await page.evaluate("window.__injected"), undefined);
    assert.equal(await page.locator("main img, main script").count(), 0);

    await page.fill("form[name=put-key] input[name=key]", "greeting");
    await page.fill("form[name=put-key] textarea[name=value]", "hello from the dashboard");
    await page.click("form[name=put-key] button");
    await page.waitForSelector("a:text-is('greeting')");
    const value = await request(`${p.apiUrl}/accounts/${p.accountId}/storage/kv/namespaces/${nsId}/values/greeting`, { headers: p.headers() });
    assert.equal(await value.body.text(), "hello from the dashboard");
  });

  it("R2: creates a bucket through the form and lists its objects", async () => {
    await page.goto(`${p.url}/dash/#/r2`);
    await page.fill("form[name=create-bucket] input[name=name]", "Not_Valid");
    await page.click("form[name=create-bucket] button");
    assert.match(await alertText(), /\(code \d+\)/);
    await page.fill("form[name=create-bucket] input[name=name]", "photos");
    await page.click("form[name=create-bucket] button");
    await page.waitForSelector("a:text-is('photos')");
    const buckets = (await api("GET", "/r2/buckets")).body.result.buckets.map((b: { name: string }) => b.name);
    assert.deepEqual(buckets, ["photos"], "the refused name left nothing behind");

    const obj = await request(`${p.apiUrl}/accounts/${p.accountId}/r2/buckets/photos/objects/cats/tom.txt`, {
      method: "PUT",
      headers: p.headers({ "content-type": "text/plain" }),
      body: "meow",
    });
    assert.equal(obj.statusCode, 200);
    await obj.body.dump();
    await page.click("a:text-is('photos')");
    await page.waitForSelector("td:text-is('cats/tom.txt')");
    assert.ok(await page.isVisible("td:text-is('4 B')"));
  });

  it("Workers: lists each script with its URL and its bindings, never a secret's value", async () => {
    const code = `export default { fetch(r, env) { return new Response("hi"); } };`;
    const bindings = [
      { type: "r2_bucket", name: "PHOTOS", bucket_name: "photos" },
      { type: "plain_text", name: "GREETING", text: "hello" },
      { type: "secret_text", name: "API_KEY", text: "secret-value-4471" },
    ];
    assert.equal((await uploadScript(p, "dash-worker", code, { bindings })).status, 200);
    await page.goto(`${p.url}/dash/#/workers`);
    const row = page.locator("tr:has(td:text-is('dash-worker'))");
    await row.waitFor();
    const text = (await row.textContent()) ?? "";
    assert.match(text, /dash-worker\.workers\.localhost:\d+\//);
    assert.match(text, /PHOTOS \(R2 bucket photos\)/);
    assert.match(text, /API_KEY \(secret\)/);
    assert.ok(!(await page.content()).includes("secret-value-4471"));
  });

  it("AI gateway: creates a gateway that collects logs and shows the requests it forwarded", async () => {
    await page.goto(`${p.url}/dash/#/ai-gateway`);
    await page.fill("form[name=create-gateway] input[name=id]", "dash-gw");
    await page.check("form[name=create-gateway] input[name=collect_logs]");
    await page.click("form[name=create-gateway] button");
    await page.waitForSelector("a:text-is('dash-gw')");
    const gw = (await api("GET", "/ai-gateway/gateways/dash-gw")).body.result;
    assert.equal(gw.collect_logs, true);
    assert.equal(gw.authentication, false);

    const answer = await callGateway(`${p.url}/v1/${p.accountId}/dash-gw/openai/chat/completions`, {
      headers: { authorization: "Bearer sk-test" },
      body: chatBody("hi"),
    });
    assert.equal(answer.status, 200);
    await page.click("a:text-is('dash-gw')");
    await page.waitForSelector("td:text-is('gpt-4o-mini')");
    assert.ok(await page.isVisible("td:text-is('openai')"));
    assert.ok(await page.isVisible("td:text-is('200')"));
  });

  it("AI gateway: a gateway token is shown once, then authentication is turned on in the spec's order, then the token is revoked", async () => {
    const url = `${p.url}/v1/${p.accountId}/dash-gw/openai/chat/completions`;
    const call = (token?: string) =>
      callGateway(url, {
        headers: { authorization: "Bearer sk-test", ...(token ? { "gw-aig-authorization": `Bearer ${token}` } : {}) },
        body: chatBody("hi"),
      });
    await page.goto(`${p.url}/dash/#/ai-gateway`);
    await page.fill("form[name=create-token] input[name=name]", "dash-client");
    await page.click("form[name=create-token] button");
    await page.waitForSelector("#new-token pre");
    const value = ((await page.textContent("#new-token pre")) ?? "").trim();
    assert.ok(value.length >= 40);
    const listed = (await api("GET", "/tokens")).body.result.find((t: { name: string }) => t.name === "dash-client");
    assert.deepEqual(
      listed.policies[0].permission_groups.map((g: { id: string }) => g.id),
      ["ai_gateway_run"],
    );
    assert.ok(!JSON.stringify(listed).includes(value), "the API never shows the value again");

    assert.equal((await call(value)).status, 200, "the client sends the token before authentication is on");
    await page.click("tr:has(a:text-is('dash-gw')) button:text-is('Turn on')");
    await page.waitForSelector("tr:has(a:text-is('dash-gw')) button:text-is('Turn off')");
    assert.equal((await api("GET", "/ai-gateway/gateways/dash-gw")).body.result.authentication, true);
    assert.equal((await call(value)).status, 200);
    assert.equal((await call()).status, 401);
    assert.equal(await page.locator("#new-token").count(), 0, "the value is gone once the page is drawn again");

    page.once("dialog", (d) => void d.accept());
    await page.click("tr:has(td:text-is('dash-client')) button:text-is('Revoke')");
    await page.waitForSelector("text=No gateway tokens yet.");
    assert.equal((await call(value)).status, 401, "a revoked token is refused");
  });

  const accessibilityViolations = () => axeViolations(page);

  it("a zone's page charts its traffic from the GraphQL Analytics API (uPlot), with the numbers in words", async () => {
    const zone = await p.api("POST", "/zones", { name: "charted.test", account: { id: p.accountId } });
    assert.equal(zone.status, 200);
    const zoneId = zone.body.result.id as string;
    // No record: the edge's error page, still the zone's traffic; rollups are written every few seconds.
    for (let i = 0; i < 3; i++) {
      const r = await request(`${p.url}/x${i}`, { headers: { host: "www.charted.test" } });
      assert.equal(r.statusCode, 404);
      await r.body.dump();
    }
    const counted = async () => {
      const res = await request(`${p.apiUrl}/graphql`, {
        method: "POST",
        headers: { ...p.headers(), "content-type": "application/json" },
        body: JSON.stringify({ query: `{ viewer { zones(filter: {zoneTag: "${zoneId}"}) { httpRequestsAdaptiveGroups(limit: 1) { count } } } }` }),
      });
      const body = (await res.body.json()) as any;
      return body.data?.viewer.zones[0].httpRequestsAdaptiveGroups[0]?.count === 3;
    };
    for (let end = Date.now() + 60_000; !(await counted());) {
      assert.ok(Date.now() < end, "the zone's requests reach the rollups");
      await new Promise((r) => setTimeout(r, 250));
    }
    await page.goto(`${p.url}/dash/#/dns/${zoneId}`);
    await page.waitForSelector(".traffic canvas");
    assert.match((await page.textContent("#traffic-summary")) ?? "", /^3 requests, 0 errors \(5xx\), [\d.]+ (B|KiB) served\.$/);
    // What the chart shows: the requests' line is drawn (its colour is on the canvas), the errors' is flat on zero.
    const drawn = (await page.evaluate(`(() => {
        const c = document.querySelector(".traffic canvas");
        const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let blue = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] < 60 && d[i + 1] > 60 && d[i + 1] < 100 && d[i + 2] > 190 && d[i + 3] > 200) blue++;
        return blue;
      })()`)) as number;
    assert.ok(drawn > 20, `the requests' line is on the chart (${drawn} pixels of its colour)`);
    assert.ok(await page.isVisible(".u-legend"), "uPlot's legend names the series");
    assert.match((await page.textContent(".u-legend")) ?? "", /Requests.*Errors \(5xx\)/s);
    const shot = join(mkdtempSync(join(tmpdir(), "dash-shot-")), "zone-traffic.png");
    await page.locator(".traffic").screenshot({ path: shot });
    assert.ok(readFileSync(shot).length > 1000, "a screenshot of the chart");
    assert.deepEqual(await accessibilityViolations(), [], "the zone page with its chart");
    await page.goto(`${p.url}/dash/#/`);
    await page.waitForSelector(".cards");
    assert.deepEqual(await accessibilityViolations(), [], "the overview");
    await page.goto(`${p.url}/dash/#/dns`);
    await page.waitForSelector("a:text-is('charted.test')");
    assert.deepEqual(await accessibilityViolations(), [], "the zones list");
  });

  it("the zone, Workers and AI gateway pages chart DNS queries, invocations, and tokens and cost (uPlot), with the numbers in words", async () => {
    const zone = (await p.api("GET", "/zones?name=charted.test")).body.result[0];
    assert.ok(zone, "the zone of the traffic chart's test");
    const dnsPort = Number(p.endpoints.dns_udp.split(":").pop());
    await udpQuery(dnsPort, "charted.test", "SOA");
    await udpQuery(dnsPort, "nothing.charted.test", "TXT");
    const up = await uploadScript(
      p,
      "charted",
      `export default { fetch(req) { if (new URL(req.url).pathname === "/throw") throw new Error("x"); return new Response("ok") } }`,
    );
    assert.equal(up.status, 200, JSON.stringify(up.body));
    for (const path of ["/", "/", "/throw"]) await hit(p, "charted", path);
    const gw = `${p.url}/v1/${p.accountId}/charted-gw/openai/chat/completions`;
    assert.equal(
      (
        await api("POST", "/ai-gateway/gateways", {
          id: "charted-gw",
          cache_ttl: 0,
          cache_invalidate_on_update: false,
          collect_logs: false,
          rate_limiting_interval: 0,
          rate_limiting_limit: 0,
        })
      ).status,
      200,
    );
    assert.equal((await callGateway(gw, { headers: { authorization: "Bearer sk-x" }, body: chatBody("chart me") })).status, 200);

    /** Pixels of a series' colour on a chart's canvas: what shows its line is drawn. */
    const pixels = (selector: string, [r, g, b]: number[]) =>
      page.evaluate(`(() => {
          const c = document.querySelector("${selector} canvas");
          const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
          let n = 0;
          for (let i = 0; i < d.length; i += 4)
            if (Math.abs(d[i] - ${r}) < 30 && Math.abs(d[i + 1] - ${g}) < 30 && Math.abs(d[i + 2] - ${b}) < 30 && d[i + 3] > 200) n++;
          return n;
        })()`) as Promise<number>;
    const shotOf = async (selector: string, name: string) => {
      const shot = join(mkdtempSync(join(tmpdir(), "dash-shot-")), `${name}.png`);
      await page.locator(selector).screenshot({ path: shot });
      assert.ok(readFileSync(shot).length > 1000, `a screenshot of ${name}`);
    };
    /** Reloads `hash` until its summary says what `pattern` wants (the rollups are written every 10 s). */
    const showsEventually = async (hash: string, summary: string, pattern: RegExp) => {
      for (let end = Date.now() + 60_000; ;) {
        await page.goto(`${p.url}/dash/${hash}`);
        await page.reload();
        await page.waitForSelector(summary);
        const text = (await page.textContent(summary)) ?? "";
        if (pattern.test(text)) return text;
        assert.ok(Date.now() < end, `${summary} says ${JSON.stringify(text)}, not ${pattern}`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    };

    await showsEventually(`#/dns/${zone.id}`, "#dns-queries-summary", /^2 queries answered, 1 of them NXDOMAIN\.$/);
    assert.ok((await pixels(".dns-queries", [4, 120, 87])) > 20, "the queries' line is drawn");
    assert.match((await page.textContent(".dns-queries .u-legend")) ?? "", /Queries.*NXDOMAIN/s);
    await shotOf(".dns-queries", "dns-queries");

    const invocations = await showsEventually("#/workers", "#invocations-summary", /^\d+ invocations, [1-9]\d* errors\.$/);
    assert.ok(Number(invocations.split(" ")[0]) >= 3, invocations);
    assert.ok((await pixels(".invocations", [29, 78, 216])) > 20, "the invocations' line is drawn");
    await shotOf(".invocations", "worker-invocations");

    const usage = await showsEventually(
      "#/ai-gateway",
      "#gateway-usage-summary",
      /^[1-9]\d* requests, [1-9]\d* tokens in, [1-9]\d* tokens out, \$\d+\.\d{6} estimated cost\.$/,
    );
    assert.ok(!usage.includes("$0.000000 "), `a priced model costs something: ${usage}`);
    assert.ok((await pixels(".gateway-usage", [124, 58, 237])) > 20, "the tokens' line is drawn");
    assert.match((await page.textContent(".gateway-usage .u-legend")) ?? "", /Tokens in.*Tokens out.*Cost \(USD\)/s);
    await shotOf(".gateway-usage", "gateway-usage");
    assert.deepEqual(await accessibilityViolations(), [], "the AI gateway page with its chart");
    await page.goto(`${p.url}/dash/#/workers`);
    await page.waitForSelector(".invocations canvas");
    assert.deepEqual(await accessibilityViolations(), [], "the Workers page with its chart");
  });

  it("signing out forgets the token", async () => {
    await page.click("#sign-out");
    await page.waitForSelector("form[name=sign-in]");
    assert.equal(await page.evaluate("sessionStorage.length"), 0);
    assert.deepEqual(pageErrors, []);
  });

  it("with a read-only token it shows everything and every change is refused with the API's reason", async () => {
    const permissions = ["dns_read", "kv_read", "r2_read", "workers_read", "ai_gateway_read", "account_settings_read", "api_tokens_read"];
    const readOnly = await p.api("POST", `/accounts/${p.accountId}/tokens`, { name: "viewer", permissions });
    assert.equal(readOnly.status, 200);
    await signIn(readOnly.body.result.value);
    await page.waitForSelector(".cards");
    await page.click("a[href='#/dns']");
    await page.waitForSelector("a:text-is('counted.test')");
    await page.fill("form[name=create-zone] input[name=name]", "not-allowed.test");
    await page.click("form[name=create-zone] button");
    assert.match(await alertText(), /\(code 10000\)/);
    assert.equal((await p.api("GET", "/zones?name=not-allowed.test")).body.result.length, 0);
    await page.click("#sign-out");
    assert.deepEqual(pageErrors, []);
  });
});
