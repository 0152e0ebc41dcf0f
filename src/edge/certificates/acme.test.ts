import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { haveCommand, startPebble } from "../../dns/testing/pebble.js";
import { AcmeOrderer } from "./acme.js";

/** A DNS-01 answerer that only notes what it was asked (pebble here takes every challenge as answered). */
const noted = () => {
  const made: string[] = [];
  return { made, answerer: { create: async (name: string) => void made.push(name), remove: async () => undefined } };
};

test(
  "the ACME account is made once and found again: a second node (or a restart) sharing its key orders at its first try, with or without a contact email",
  { timeout: 120_000 },
  async (t) => {
    const missing = ["pebble", "openssl"].filter((c) => !haveCommand(c));
    if (missing.length) return t.skip(`needs ${missing.join(" and ")}`);
    const dir = mkdtempSync(join(tmpdir(), "edge-acme-"));
    const pebble = await startPebble(dir, "127.0.0.1:9", { alwaysValid: true });
    t.after(() => (pebble.process.kill("SIGTERM"), rmSync(dir, { recursive: true, force: true })));
    // The key kept for the platform (the certificates' store on every node): made once, then read.
    let kept: string | undefined;
    let made = 0;
    const accountKey = async (make: () => Promise<string>) => (kept ??= (made++, await make()));
    const cfg = (email?: string) => ({ directoryUrl: pebble.directory, email, ca: readFileSync(pebble.serverCaFile, "utf8") });
    // Three processes' worth of orderers on one account: the first registers it; the others find it. Pebble refuses
    // a registration sent again as an update that changes nothing, which is what a second node's first order sent.
    const orderers = [new AcmeOrderer(cfg(), accountKey), new AcmeOrderer(cfg(), accountKey), new AcmeOrderer(cfg("ops@acme.example"), accountKey)];
    t.after(() => Promise.all(orderers.map((o) => o.close())));
    for (const [i, orderer] of orderers.entries()) {
      const dns = noted();
      const issued = await orderer.order(`node${i}.acme.example`, dns.answerer);
      assert.match(issued.certPem, /BEGIN CERTIFICATE/, `node ${i} got its certificate at the first order`);
      assert.deepEqual(dns.made, [`_acme-challenge.node${i}.acme.example`]);
    }
    assert.equal(made, 1, "one account key");
  },
);

test("acme-client is loaded by the first order, not by making the orderer or stopping it: a platform that orders nothing never holds it in memory", async () => {
  // A process of its own: this file's other tests load acme-client.
  const script = `
    import { createRequire } from "node:module";
    const { AcmeOrderer } = await import(${JSON.stringify(new URL("./acme.js", import.meta.url).href)});
    const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes("/node_modules/acme-client/"));
    const orderer = new AcmeOrderer({ directoryUrl: "https://127.0.0.1:9/dir" }, async (make) => make());
    const before = loaded();
    await orderer.close();
    const afterClose = loaded();
    const failed = await orderer.order("a.example", { create: async () => undefined, remove: async () => undefined }).then(() => "ordered", (e) => e.message);
    console.log(JSON.stringify({ before, afterClose, failed, afterOrder: loaded() }));`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 60_000 });
  const seen = JSON.parse(out.trim().split("\n").pop()!) as { before: boolean; afterClose: boolean; failed: string; afterOrder: boolean };
  assert.deepEqual(seen, { before: false, afterClose: false, failed: "the platform is stopping", afterOrder: true });
});
