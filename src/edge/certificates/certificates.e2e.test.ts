import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import Database from "better-sqlite3";
import { request } from "undici";
import type { TestPlatform } from "../../core/testing/platform.js";
import { haveCommand } from "../../dns/testing/pebble.js";
import { createAccount, logEntries, startPlatform, uploadScript } from "../../workers/testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";
import { type AcmePlatform, curlTls, startAcmePlatform } from "../../workers/testing/tls.js";

/**
 * Certificates of Custom Domains with real components: pebble (Let's Encrypt's test CA) orders are answered by the
 * platform's own DNS server (through a forwarder of this test, which refuses the names of the failure case), the
 * certificates are checked by curl against pebble's root, by SNI, for domains of two accounts.
 */
const missing = ["pebble", "openssl", "curl"].filter((c) => !haveCommand(c));
const dir = mkdtempSync(join(tmpdir(), "edge-tls-"));
let p: TestPlatform | undefined;
let acme: AcmePlatform | undefined;
let tlsPort = 0;
let accountB = "";
let rootFile = "";
/** What SecretBox.seal output begins with (core/secret-box.ts). */
const SEALED_PREFIX = "v1.";

/** curl to `host` on the HTTPS port, trusting pebble's root only. */
const curl = (host: string, path = "/") => curlTls(host, tlsPort, rootFile, path);

before(async () => {
  if (missing.length) return;
  acme = await startAcmePlatform(dir, ["--acme-email", "ops@tls-a.example"]);
  p = acme.p;
  ({ tlsPort, rootFile } = acme);
  accountB = await createAccount(p, "tls-b");
});

after(async () => {
  await acme?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const skip = (t: { skip(m: string): void }) => {
  if (!missing.length) return false;
  t.skip(`needs pebble, openssl and curl (missing: ${missing.join(", ")})`);
  return true;
};

async function zone(name: string, accountId: string): Promise<string> {
  const r = await p!.api("POST", "/zones", { name, account: { id: accountId } }, p!.keyHeaders());
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.result.id;
}

const attach = (hostname: string, service: string, accountId: string) =>
  p!.api("PUT", `/accounts/${accountId}/workers/domains`, { hostname, service, environment: "production" }, p!.keyHeaders());
const domain = (accountId: string, id: string) => p!.api("GET", `/accounts/${accountId}/workers/domains/${id}`, undefined, p!.keyHeaders());
/** Generous: a hang guard for orders on a busy machine, not a timing check. */
const ORDER_GUARD_MS = 180_000;

test("a Custom Domain of each of two accounts gets its certificate from the ACME CA, served by SNI on the HTTPS port; detach stops serving it", async (t) => {
  if (skip(t)) return;
  const zoneA = await zone("tls-a.example", p!.accountId);
  await zone("tls-b.example", accountB);
  // The Worker's request.url says how the client came: https: on the HTTPS port.
  const fetchHost = `export default { fetch: (req) => new Response(NAME + " " + new URL(req.url).protocol + "//" + new URL(req.url).hostname) };`;
  assert.equal((await uploadScript(p!, "tls-app-a", fetchHost.replace("NAME", '"A"'))).status, 200);
  assert.equal((await uploadScript(p!, "tls-app-b", fetchHost.replace("NAME", '"B"'), {}, { accountId: accountB, headers: p!.keyHeaders() })).status, 200);

  // Attach answers at once, the order still to come.
  const a = await attach("shop.tls-a.example", "tls-app-a", p!.accountId);
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.equal(a.body.result.certificate.status, "pending");
  const b = await attach("shop.tls-b.example", "tls-app-b", accountB);
  assert.equal(b.status, 200, JSON.stringify(b.body));

  const active = async (accountId: string, id: string) => (await domain(accountId, id)).body.result.certificate.status === "active";
  await eventually(() => active(p!.accountId, a.body.result.id), "shop.tls-a.example's certificate", ORDER_GUARD_MS);
  await eventually(() => active(accountB, b.body.result.id), "shop.tls-b.example's certificate", ORDER_GUARD_MS);
  const shown = (await domain(p!.accountId, a.body.result.id)).body.result.certificate;
  assert.ok(Date.parse(shown.expires_on) > Date.now(), JSON.stringify(shown));

  // curl checks the chain against pebble's root and the name: each hostname reaches its own account's Worker.
  const toA = await curl("shop.tls-a.example", "/hello");
  assert.equal(toA.code, 0, toA.err);
  assert.equal(toA.out, "A https://shop.tls-a.example");
  const toB = await curl("shop.tls-b.example");
  assert.equal(toB.code, 0, toB.err);
  assert.equal(toB.out, "B https://shop.tls-b.example");
  const plain = await request(`${p!.url}/`, { headers: { host: "shop.tls-a.example" } });
  assert.equal(await plain.body.text(), "A http://shop.tls-a.example", "the plain edge port serves the domain as before");
  // A name without a Custom Domain gets no certificate: the handshake fails (curl 35), nothing is served.
  assert.equal((await curl("nothing.tls-a.example")).code, 35);

  // The challenge records are gone; the key is sealed at rest and shown nowhere.
  const records = await p!.api("GET", `/zones/${zoneA}/dns_records?type=TXT`);
  assert.deepEqual(records.body.result, []);
  const db = new Database(join(p!.stateDir, "db", "worker-certificates.sqlite"), { readonly: true, fileMustExist: true });
  const rows = db.prepare("SELECT hostname, key_sealed, cert_pem FROM certificates ORDER BY hostname").all() as { key_sealed: string; cert_pem: string }[];
  db.close();
  assert.equal(rows.length, 2);
  for (const r of rows) {
    assert.ok(r.cert_pem.includes("BEGIN CERTIFICATE"));
    assert.ok(!r.key_sealed.includes("PRIVATE KEY") && r.key_sealed.startsWith(SEALED_PREFIX), "the key is stored sealed");
  }
  assert.ok(!JSON.stringify((await p!.api("GET", `/accounts/${p!.accountId}/workers/domains`)).body).includes("PRIVATE KEY"));
  assert.ok(!p!.output().includes("PRIVATE KEY"));

  // Detached: the certificate is not served any more, from the detach's answer on.
  const gone = await p!.api("DELETE", `/accounts/${accountB}/workers/domains/${b.body.result.id}`, undefined, p!.keyHeaders());
  assert.equal(gone.status, 200);
  assert.equal((await curl("shop.tls-b.example")).code, 35);
  assert.equal((await curl("shop.tls-a.example")).out, "A https://shop.tls-a.example", "the other account's domain is served as before");
});

test("a failed challenge leaves the domain attached, its certificate failed with the CA's reason and a retry time; never a 500", async (t) => {
  if (skip(t)) return;
  const zoneId = await zone("tls-c.example", p!.accountId);
  assert.equal((await uploadScript(p!, "tls-app-c", `export default { fetch: () => new Response("C") };`)).status, 200);
  const d = await attach("refused.tls-c.example", "tls-app-c", p!.accountId);
  assert.equal(d.status, 200, JSON.stringify(d.body));
  let state: Record<string, string> = {};
  await eventually(
    async () => {
      const r = await domain(p!.accountId, d.body.result.id);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      state = r.body.result.certificate;
      return state.status === "failed";
    },
    "the failed order",
    ORDER_GUARD_MS,
  );
  t.diagnostic(`certificate state: ${JSON.stringify(state)}`);
  assert.match(state.last_error, /REFUSED|DNS/i, JSON.stringify(state));
  assert.ok(Date.parse(state.next_attempt_on) > Date.now(), "retried later, with backoff");
  // The log is written asynchronously (pino): it may arrive just after the state the API shows.
  await eventually(
    () => logEntries(p!).some((l) => l.hostname === "refused.tls-c.example" && /order failed/.test(l.msg ?? "")),
    "the failure logged with its hostname",
    60_000,
  );
  assert.deepEqual((await p!.api("GET", `/zones/${zoneId}/dns_records?type=TXT`)).body.result, [], "the challenge record was removed");
  // No certificate, no handshake; the plain edge port serves the domain as before.
  assert.equal((await curl("refused.tls-c.example")).code, 35);
  const plain = await request(`${p!.url}/`, { headers: { host: "refused.tls-c.example" } });
  assert.equal(await plain.body.text(), "C");
});
