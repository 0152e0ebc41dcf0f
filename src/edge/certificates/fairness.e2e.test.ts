import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { TestPlatform } from "../../core/testing/platform.js";
import { haveCommand } from "../../dns/testing/pebble.js";
import { createAccount, logEntries, startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { type AcmePlatform, startAcmePlatform } from "../../workers/testing/tls.js";

/**
 * Issue 30, hole 7, with real components (pebble as the CA, answered by the platform's own DNS): certificate orders
 * are fair between accounts, and an account may have only so many waiting (--acme-pending-per-account, 8 here).
 */
const missing = ["pebble", "openssl"].filter((c) => !haveCommand(c));
const dir = mkdtempSync(join(tmpdir(), "edge-tls-fair-"));
let p: TestPlatform | undefined;
let acme: AcmePlatform | undefined;
let accountB = "";
const PENDING_MAX = 8;
/** Generous: a hang guard for orders on a busy machine, not a timing check. */
const ORDER_GUARD_MS = 300_000;

before(async () => {
  if (missing.length) return;
  acme = await startAcmePlatform(dir, ["--acme-pending-per-account", String(PENDING_MAX)]);
  p = acme.p;
  accountB = await createAccount(p, "fair-b");
});

after(async () => {
  await acme?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

test("B's many domains do not hold up A's certificate (orders are round robin by account), and B's domains past the cap of waiting certificates are refused at attach", async (t) => {
  if (missing.length) return t.skip(`needs pebble and openssl (missing: ${missing.join(", ")})`);
  const api = p!.api.bind(p);
  for (const [name, account] of [
    ["fair-a.example", p!.accountId],
    ["fair-b.example", accountB],
  ] as const)
    assert.equal((await api("POST", "/zones", { name, account: { id: account } }, p!.keyHeaders())).status, 200);
  const worker = `export default { fetch: () => new Response("ok") };`;
  assert.equal((await uploadScript(p!, "fair-a", worker)).status, 200);
  assert.equal((await uploadScript(p!, "fair-b", worker, {}, { accountId: accountB, headers: p!.keyHeaders() })).status, 200);

  // B attaches its cap's worth at once (wrangler's call), then one more: refused, nothing of it attached. B's names
  // hold the label the forwarder refuses, so their orders fail and stay waiting (a failed certificate counts too).
  const bHosts = Array.from({ length: PENDING_MAX }, (_, i) => `d${i}.refused.fair-b.example`);
  const many = await api(
    "PUT",
    `/accounts/${accountB}/workers/scripts/fair-b/domains/records`,
    { origins: bHosts.map((hostname) => ({ hostname })) },
    p!.keyHeaders(),
  );
  assert.equal(many.status, 200, JSON.stringify(many.body));
  const attachB = (hostname: string) =>
    api("PUT", `/accounts/${accountB}/workers/domains`, { hostname, service: "fair-b", environment: "production" }, p!.keyHeaders());
  const over = await attachB("over.refused.fair-b.example");
  assert.equal(over.status, 429, JSON.stringify(over.body));
  assert.equal(over.body.errors[0].code, 100193);
  assert.match(over.body.errors[0].message, /at most 8 may wait/);
  // Re-attaching one B already has adds nothing to wait for: allowed.
  assert.equal((await attachB(bHosts[0]!)).status, 200);

  // A's one domain, attached after B's, is ordered within the first round, not after all of B's.
  const a = await api("PUT", `/accounts/${p!.accountId}/workers/domains`, { hostname: "shop.fair-a.example", service: "fair-a", environment: "production" });
  assert.equal(a.status, 200, JSON.stringify(a.body));
  const ordered = () =>
    logEntries(p!)
      .filter((l) => /^ordering the certificate/.test(l.msg ?? ""))
      .map((l) => l.hostname as string);
  const lastOfB = bHosts.at(-1)!;
  await eventually(() => ordered().includes("shop.fair-a.example") && ordered().includes(lastOfB), "A's order and B's last", ORDER_GUARD_MS);
  t.diagnostic(`orders started: ${ordered().join(", ")}`);
  // Each of B's orders takes a second or more (the CA's polling), so B still had a backlog when A's came in: one
  // FIFO started A's after all of B's; round robin starts it before B's last.
  assert.ok(ordered().indexOf("shop.fair-a.example") < ordered().indexOf(lastOfB), `orders started: ${ordered().join(", ")}`);

  // A's certificate is issued; B's failed ones still count, until B detaches one: then B may attach one more.
  const certificateOf = async (account: string, hostname: string) => {
    const list = await api("GET", `/accounts/${account}/workers/domains?hostname=${hostname}`, undefined, p!.keyHeaders());
    return list.body.result[0] as { id: string; certificate: { status: string } };
  };
  await eventually(async () => (await certificateOf(p!.accountId, "shop.fair-a.example")).certificate.status === "active", "A's certificate", ORDER_GUARD_MS);
  await eventually(async () => (await certificateOf(accountB, bHosts[0]!)).certificate.status === "failed", "B's first order failing", ORDER_GUARD_MS);
  assert.equal((await attachB("still.refused.fair-b.example")).status, 429, "a failed certificate still waits");
  const first = await certificateOf(accountB, bHosts[0]!);
  assert.equal((await api("DELETE", `/accounts/${accountB}/workers/domains/${first.id}`, undefined, p!.keyHeaders())).status, 200);
  const later = await attachB("later.fair-b.example");
  assert.equal(later.status, 200, JSON.stringify(later.body));
});
