import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium } from "playwright-core";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createGateway, startGatewayPlatform } from "../testing/helpers.js";

const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find((p) => p && existsSync(p));
const PAGE = `<!doctype html><p>Bad gateway</p><script>window.__ran = sessionStorage.length + 1</script>`;

// The gateway answers on the dashboard's origin; a provider answering with a page must not get a script run there.
describe("a provider's answer that is an HTML page", () => {
  let p: TestPlatform;
  let provider: Server;

  before(async () => {
    provider = createServer((_req, res) => res.writeHead(502, { "content-type": "text/html; charset=utf-8" }).end(PAGE));
    await new Promise<void>((r) => provider.listen(0, "127.0.0.1", r));
    const port = (provider.address() as AddressInfo).port;
    p = await startGatewayPlatform([`openai=http://127.0.0.1:${port}`]);
    await createGateway(p, "html");
  });
  after(async () => {
    await p?.dispose();
    provider?.close();
  });

  const url = () => `${p.url}/v1/${p.accountId}/html/openai/models`;

  it("is relayed sandboxed, with nosniff", async () => {
    const res = await fetch(url(), { headers: { authorization: "Bearer sk-test" } });
    assert.equal(res.status, 502);
    assert.equal(await res.text(), PAGE, "the body is relayed as the provider sent it");
    assert.match(res.headers.get("content-security-policy") ?? "", /\bsandbox\b/);
    assert.match(res.headers.get("content-security-policy") ?? "", /default-src 'none'/);
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  });

  it("runs no script in a real browser that opens it", { skip: !CHROMIUM && !process.env.CI && "chromium is not installed" }, async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage();
      await page.goto(url());
      assert.match(await page.content(), /Bad gateway/, "the page was shown");
      assert.equal(await page.evaluate("window.__ran"), undefined);
    } finally {
      await browser.close();
    }
  });
});
