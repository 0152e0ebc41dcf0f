import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { eventually } from "../../core/testing/eventually.js";
import { assertPromtoolAccepts, freeMetricsPort, sample, scrape } from "../../core/testing/metrics.js";
import { haveCommand } from "../../dns/testing/pebble.js";
import { uploadScript } from "../../workers/testing/helpers.js";
import { startAcmePlatform } from "../../workers/testing/tls.js";
import { testCertificates } from "../testing/origins.js";

const missing = ["pebble", "openssl", "curl"].filter((c) => !haveCommand(c));
/** Generous: a hang guard for orders on a busy machine, not a timing check. */
const ORDER_GUARD_MS = 180_000;

/**
 * Certificate metrics with pebble (Let's Encrypt's test CA): an order that succeeds and one whose challenge fails
 * (the test's DNS forwarder refuses names with a `refused` label), and a certificate an account uploads; counted by
 * kind and status, expiring within 7 and 30 days, the earliest expiry, and the orders this node finished.
 */
test("certificates by kind and status, expiring soon, earliest expiry and orders in /metrics", async (t) => {
  if (missing.length) return t.skip(`needs pebble, openssl and curl (missing: ${missing.join(", ")})`);
  const dir = mkdtempSync(join(tmpdir(), "edge-cert-metrics-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freeMetricsPort();
  const acme = await startAcmePlatform(dir, ["--metrics-port", String(port)]);
  t.after(() => acme.dispose());
  const p = acme.p;
  const url = `http://127.0.0.1:${port}/metrics`;
  const zone = await p.api("POST", "/zones", { name: "cm.example", account: { id: p.accountId } }, p.keyHeaders());
  assert.equal(zone.status, 200, JSON.stringify(zone.body));
  assert.equal((await uploadScript(p, "cm-app", `export default { fetch: () => new Response("ok") };`)).status, 200);
  const attach = async (hostname: string) => {
    const r = await p.api("PUT", `/accounts/${p.accountId}/workers/domains`, { hostname, service: "cm-app", environment: "production" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.result.id as string;
  };
  const certificate = async (id: string) => (await p.api("GET", `/accounts/${p.accountId}/workers/domains/${id}`)).body.result.certificate;
  const issued = await attach("shop.cm.example");
  const refused = await attach("refused.cm.example");
  await eventually(async () => (await certificate(issued)).status === "active", "the issued order", ORDER_GUARD_MS);
  await eventually(async () => (await certificate(refused)).status === "failed", "the failed order", ORDER_GUARD_MS);
  const expiresOn = Date.parse((await certificate(issued)).expires_on);

  // An uploaded certificate of the zone, valid two days: expiring within 7 days.
  const certs = testCertificates(["cm.example", "*.cm.example"]);
  t.after(() => certs.dispose());
  const uploaded = await p.api("POST", `/zones/${zone.body.result.id}/custom_certificates`, { certificate: certs.signed.cert, private_key: certs.signed.key });
  assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
  const uploadedExpiry = Date.parse(new X509Certificate(certs.signed.cert).validTo);

  let text = "";
  await eventually(
    async () => {
      text = await scrape(url);
      return sample(text, "edgeplatform_certificates", 'kind="custom_uploaded",status="active"') === 1;
    },
    "the uploaded certificate read",
    60_000,
  );
  const s = (name: string, labels: string) => sample(text, `edgeplatform_${name}`, labels);
  assert.equal(s("certificates", 'kind="custom_domain",status="active"'), 1);
  assert.equal(s("certificates", 'kind="custom_domain",status="failed"'), 1);
  assert.equal(s("certificate_orders_total", 'kind="custom_domain",outcome="issued"'), 1);
  assert.ok(s("certificate_orders_total", 'kind="custom_domain",outcome="failed"')! >= 1, "retried with backoff: at least once");
  assert.equal(s("certificate_orders_total", 'kind="zone_edge",outcome="issued"'), 0);
  assert.equal(s("certificates_earliest_expiry_timestamp_seconds", 'kind="custom_domain"'), Math.floor(expiresOn / 1000));
  assert.equal(s("certificates_earliest_expiry_timestamp_seconds", 'kind="custom_uploaded"'), Math.floor(uploadedExpiry / 1000));
  assert.equal(s("certificates_earliest_expiry_timestamp_seconds", 'kind="zone_edge"'), undefined, "none issued");
  assert.equal(s("certificates_expiring", 'kind="custom_uploaded",within="7d"'), 1);
  assert.equal(s("certificates_expiring", 'kind="custom_uploaded",within="30d"'), 1);
  const soon = (days: number) => (expiresOn <= Date.now() + days * 86_400_000 ? 1 : 0);
  assert.equal(s("certificates_expiring", 'kind="custom_domain",within="7d"'), soon(7), "as the CA's validity has it");
  assert.equal(s("certificates_expiring", 'kind="custom_domain",within="30d"'), soon(30));
  assert.ok(!text.includes("cm.example"), "no hostname is a label");

  await assertPromtoolAccepts(t, text);
});
