import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium, type Browser, type Page } from "playwright-core";
import { eventually } from "../core/testing/eventually.js";
import type { TestPlatform } from "../core/testing/platform.js";
import { hit, startPlatform, uploadScript } from "../workers/testing/helpers.js";

/** Debian's chromium (installed by .ci/run), or CHROMIUM_PATH. */
const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find((p) => p && existsSync(p));
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const MARKUP = `<img src=x onerror="window.__injected=1">`;

const WORKER = `export default {
  async fetch(req) {
    console.log("hello from", new URL(req.url).pathname, ${JSON.stringify(MARKUP)});
    return new Response("ok", { status: 201 });
  },
};`;

describe(
  "the dashboard's Workers Logs page in a real browser",
  { skip: !CHROMIUM && !process.env.CI && "chromium is not installed (apt-get install chromium); runs under CI" },
  () => {
    let p: TestPlatform;
    let browser: Browser;
    let page: Page;
    const pageErrors: string[] = [];

    before(async () => {
      assert.ok(CHROMIUM, "chromium is required under CI (apt-get install chromium)");
      p = await startPlatform();
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      page = await browser.newPage();
      page.setDefaultTimeout(20_000);
      page.on("pageerror", (e) => pageErrors.push(e.message));
      await page.goto(`${p.url}/`);
      await page.fill("form[name=sign-in] input[name=token]", p.token);
      await page.click("form[name=sign-in] button");
      await page.waitForSelector(".cards");
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

      await page.evaluate(AXE_SOURCE);
      const result = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
        violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
      };
      const serious = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
      assert.deepEqual(serious, []);

      await page.goto(`${p.url}/dash/#/worker-logs/dash-quiet`);
      await page.waitForSelector("#logs-setting:has-text('Observability is off')");
      assert.match((await page.textContent("#logs-count")) ?? "", /^0 events/);
      assert.deepEqual(pageErrors, []);
    });
  },
);
