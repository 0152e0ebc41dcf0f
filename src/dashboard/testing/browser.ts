import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium, type Browser, type Page } from "playwright-core";

/**
 * What the dashboard's browser tests share: Chromium, signing in through the dashboard's own form, and the
 * accessibility pass (axe-core).
 */

/** Debian's chromium (installed by .ci/run), or CHROMIUM_PATH. */
export const CHROMIUM = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find((p) => p && existsSync(p));

/** The `skip` of a browser test's describe: skipped without Chromium, except under CI (where it must be there). */
export const SKIP_WITHOUT_CHROMIUM = !CHROMIUM && !process.env.CI && "chromium is not installed (apt-get install chromium); runs under CI";

/** Markup a tenant could put in a name or a logged line: the pages must show it as text, never run it. */
export const MARKUP = `<img src=x onerror="window.__injected=1">`;

/** axe-core, the accessibility checker, evaluated in the page through the DevTools protocol (the page's CSP allows no inline script). */
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * Starts Chromium and opens a page, with the page's uncaught errors gathered in `pageErrors`. `timeout` is a hang
 * guard for every page action, not a timing check (on a busy machine 15 s was seen running out).
 */
export async function openBrowser(opts: { viewport?: { width: number; height: number }; timeout?: number } = {}): Promise<{
  browser: Browser;
  page: Page;
  pageErrors: string[];
}> {
  assert.ok(CHROMIUM, "chromium is required under CI (apt-get install chromium)");
  // Running as root (CI containers) needs --no-sandbox; the page is our own.
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  const page = await browser.newPage(opts.viewport && { viewport: opts.viewport });
  page.setDefaultTimeout(opts.timeout ?? 60_000);
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(e.message));
  return { browser, page, pageErrors };
}

/** Signs in with `token` through the dashboard's form at `baseUrl`; with `home`, waits for the overview's cards. */
export async function signIn(page: Page, baseUrl: string, token: string, opts: { home?: boolean } = {}): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.fill("form[name=sign-in] input[name=token]", token);
  await page.click("form[name=sign-in] button");
  if (opts.home) await page.waitForSelector(".cards");
}

/** The serious and critical accessibility violations axe-core finds on the page as it is, one line each. */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const result = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  };
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}
