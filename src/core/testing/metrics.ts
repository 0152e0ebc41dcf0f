import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createServer } from "node:net";
import type { TestContext } from "node:test";
import { request } from "undici";
import { skipReason } from "./services.js";
import { eventually } from "./eventually.js";

/** A free loopback port for --metrics-port. */
export const freeMetricsPort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

/** GET /metrics: the exposition text. */
export async function scrape(url: string): Promise<string> {
  const res = await request(url);
  assert.equal(res.statusCode, 200);
  return res.body.text();
}

/** A sample's value by its name and exact labels (in the order prom-client writes them; "" for none). */
export function sample(text: string, name: string, labels = ""): number | undefined {
  const head = labels === "" ? `${name} ` : `${name}{${labels}} `;
  const line = text.split("\n").find((l) => l.startsWith(head));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** Scrapes until `check` passes on the text (counts some processes report every few seconds); the last text. */
export async function scrapeUntil(url: string, what: string, check: (text: string) => boolean): Promise<string> {
  let text = "";
  await eventually(
    async () => {
      text = await scrape(url);
      return check(text);
    },
    what,
    60_000,
  );
  return text;
}

/** `promtool check metrics` on the text (its lint included): skipped without promtool unless services are required. */
export async function assertPromtoolAccepts(t: TestContext, text: string): Promise<void> {
  const missing = await new Promise<string | undefined>((resolve) =>
    execFile("promtool", ["--version"], (err) => resolve(err ? "promtool is not installed (Debian package prometheus)" : undefined)),
  );
  if (missing !== undefined) {
    const skip = skipReason({ available: false, reason: missing });
    if (skip) return t.skip(skip);
  }
  const checked = await new Promise<{ code: number; out: string }>((resolve) => {
    const child = execFile("promtool", ["check", "metrics"], (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
    child.stdin!.end(text);
  });
  assert.equal(checked.code, 0, checked.out);
}
