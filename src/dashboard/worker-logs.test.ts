import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { eventually } from "../core/testing/eventually.js";
import type { TestPlatform } from "../core/testing/platform.js";
import { hit, startPlatform, uploadScript } from "../workers/testing/helpers.js";
import { MARKUP, SKIP_WITHOUT_CHROMIUM, accessibilityViolations, openBrowser, signIn } from "./testing/browser.js";

const WORKER = `export default {
  async fetch(req) {
    console.log("hello from", new URL(req.url).pathname, ${JSON.stringify(MARKUP)});
    return new Response("ok", { status: 201 });
  },
};`;

describe("the dashboard's Workers Logs page in a real browser", { skip: SKIP_WITHOUT_CHROMIUM }, () => {
  let p: TestPlatform;
  let browser: Browser;
  let page: Page;
  let pageErrors: string[] = [];

  before(async () => {
    p = await startPlatform();
    ({ browser, page, pageErrors } = await openBrowser());
    await signIn(page, p.url, p.token, { home: true });
  });
  after(async () => {
    await browser?.close();
    await p?.dispose();
  });

  it("shows a Worker's invocations and console lines as text, searches them, and has no serious accessibility violation", async () => {
    assert.equal((await uploadScript(p, "dash-logs", WORKER, { observability: { enabled: true } })).status, 200);
    assert.equal((await uploadScript(p, "dash-quiet", WORKER)).status, 200);
    await hit(p, "dash-logs", "/first");
    await hit(p, "dash-logs", "/second");
    const kept = async () =>
      (
        await p.api("POST", `/accounts/${p.accountId}/workers/observability/telemetry/query`, {
          queryId: "t",
          timeframe: { from: Date.now() - 600_000, to: Date.now() + 60_000 },
        })
      ).body.result.events.count as number;
    await eventually(async () => (await kept()) >= 4, "the events kept", 60_000);

    await page.goto(`${p.url}/dash/#/workers`);
    await page.click("tr:has(td:text-is('dash-logs')) a:text-is('Logs')");
    await page.waitForSelector("td:has-text('hello from /second')");
    assert.match((await page.textContent("#logs-setting")) ?? "", /Observability is on: 100% of invocations are kept/);
    const invocation = (await page.locator("tbody tr", { hasText: "invocation" }).filter({ hasText: "GET /first" }).textContent()) ?? "";
    assert.match(invocation, /invocation/);
    assert.match(invocation, /201/);
    assert.ok((await page.locator("td:has-text('hello from /first')").textContent())?.includes(MARKUP), "the line is shown as text");
    assert.equal(await page.evaluate("window.__injected"), undefined, "a logged line cannot inject markup");

    await page.fill("form[name=worker-logs-search] input[name=search]", "/second");
    await page.click("form[name=worker-logs-search] button");
    await page.locator("td:has-text('hello from /first')").waitFor({ state: "detached" });
    assert.ok(await page.isVisible("td:has-text('hello from /second')"));

    assert.deepEqual(await accessibilityViolations(page), [], "the Workers Logs page");

    await page.goto(`${p.url}/dash/#/worker-logs/dash-quiet`);
    await page.waitForSelector("#logs-setting:has-text('Observability is off')");
    assert.match((await page.textContent("#logs-count")) ?? "", /^0 events/);
    assert.deepEqual(pageErrors, []);
  });
});
