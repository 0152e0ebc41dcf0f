import assert from "node:assert/strict";
import { storeContract } from "../../core/testing/contract.js";
import type { CertificateStore } from "./store.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const LEASE = 60_000;
const cert = (n: number) => ({ certPem: `-----BEGIN CERTIFICATE-----\n${n}`, keySealed: `sealed-${n}`, notAfter: 9_000_000 + n, nextAttemptAt: 5_000_000 + n });

export const describeCertificateStore = storeContract<CertificateStore>("CertificateStore", (it) => {
  it("ensure makes one pending row per hostname, due at once; a second ensure of the same account changes nothing", async (store) => {
    await store.ensure("shop.example.com", A, 1000);
    await store.ensure("shop.example.com", A, 2000);
    await store.ensure("api.example.net", B, 1500);
    assert.deepEqual(await store.all(), [
      {
        hostname: "api.example.net",
        accountId: B,
        status: "pending",
        certPem: null,
        keySealed: null,
        notAfter: null,
        lastError: null,
        failures: 0,
        nextAttemptAt: 1500,
      },
      {
        hostname: "shop.example.com",
        accountId: A,
        status: "pending",
        certPem: null,
        keySealed: null,
        notAfter: null,
        lastError: null,
        failures: 0,
        nextAttemptAt: 1000,
      },
    ]);
  });

  it("one claim at a time: a second node's claim fails until the first ends (issued or failed) or its lease runs out", async (store) => {
    await store.ensure("shop.example.com", A, 0);
    assert.equal(await store.claim("shop.example.com", "node-1", 1000, LEASE), true);
    assert.equal(await store.claim("shop.example.com", "node-2", 1000 + LEASE - 1, LEASE), false);
    assert.equal(await store.claim("shop.example.com", "node-2", 1000 + LEASE, LEASE), true, "a claim whose lease ran out is taken over");
    // The first node's late result does not overwrite: the claim is the second node's now.
    assert.equal(await store.issued("shop.example.com", "node-1", cert(1)), false);
    assert.equal(await store.failed("shop.example.com", "node-1", { error: "late", nextAttemptAt: 1 }), false);
    assert.equal(await store.issued("shop.example.com", "node-2", cert(2)), true);
    assert.equal(await store.claim("shop.example.com", "node-1", cert(2).nextAttemptAt, LEASE), true, "issued releases the claim");
    assert.ok(await store.failed("shop.example.com", "node-1", { error: "x", nextAttemptAt: cert(1).nextAttemptAt + 100 }));
    assert.equal(await store.claim("nothing.example.com", "node-1", 0, LEASE), false, "no row, no claim");
    // Issued: due again at its renewal time only, so a node that saw the row pending does not order it again.
    assert.equal(await store.claim("shop.example.com", "node-2", cert(1).nextAttemptAt - 1, LEASE), false);
  });

  it("issued stores the certificate and sealed key; a failure counts and keeps a certificate it has (active, with the error)", async (store) => {
    await store.ensure("shop.example.com", A, 0);
    assert.ok(await store.claim("shop.example.com", "n", 1, LEASE));
    assert.ok(await store.failed("shop.example.com", "n", { error: "DNS problem", nextAttemptAt: 70_000 }));
    let [row] = await store.all();
    assert.deepEqual([row.status, row.lastError, row.failures, row.nextAttemptAt], ["failed", "DNS problem", 1, 70_000]);
    assert.equal(await store.claim("shop.example.com", "n", 69_999, LEASE), false, "not before its retry time");
    assert.ok(await store.claim("shop.example.com", "n", 70_000, LEASE));
    assert.ok(await store.issued("shop.example.com", "n", cert(3)));
    [row] = await store.all();
    assert.deepEqual(row, { hostname: "shop.example.com", accountId: A, status: "active", ...cert(3), lastError: null, failures: 0 });
    assert.ok(await store.claim("shop.example.com", "n", 5_000_003, LEASE));
    assert.ok(await store.failed("shop.example.com", "n", { error: "CA down", nextAttemptAt: 5_060_000 }));
    [row] = await store.all();
    assert.deepEqual([row.status, row.certPem, row.lastError, row.failures], ["active", cert(3).certPem, "CA down", 1]);
  });

  it("a hostname ensured for another account starts over (the certificate is not theirs); delete removes the row", async (store) => {
    await store.ensure("shop.example.com", A, 0);
    assert.ok(await store.claim("shop.example.com", "n", 1, LEASE));
    assert.ok(await store.issued("shop.example.com", "n", cert(4)));
    await store.ensure("shop.example.com", B, 77);
    const [row] = await store.all();
    assert.deepEqual([row.accountId, row.status, row.certPem, row.keySealed, row.nextAttemptAt], [B, "pending", null, null, 77]);
    assert.equal(await store.delete("shop.example.com"), true);
    assert.equal(await store.delete("shop.example.com"), false);
    assert.deepEqual(await store.all(), []);
  });

  it("the ACME account key: the first one kept for a directory stays", async (store) => {
    assert.equal(await store.accountKey("https://ca.example/dir"), undefined);
    assert.equal(await store.saveAccountKey("https://ca.example/dir", "first"), "first");
    assert.equal(await store.saveAccountKey("https://ca.example/dir", "second"), "first");
    assert.equal(await store.saveAccountKey("https://other.example/dir", "third"), "third");
    assert.equal(await store.accountKey("https://ca.example/dir"), "first");
  });

  it("custom certificates: added under a per-zone cap, replaced and deleted only within their zone, removed with it", async (store) => {
    const row = (id: string, zoneId: string, t: number) => ({
      id,
      zoneId,
      accountId: A,
      hosts: ["www.example.com", "*.example.com"],
      certPem: `pem-${id}`,
      keySealed: `sealed-${id}`,
      issuer: "Test CA",
      signature: "SHA256WithRSA",
      bundleMethod: "ubiquitous",
      expiresOn: 9_000_000_000_000,
      uploadedOn: t,
      modifiedOn: t,
    });
    assert.equal(await store.addCustomCertificate(row("c1", "z1", 1), 2), true);
    assert.equal(await store.addCustomCertificate(row("c2", "z1", 2), 2), true);
    assert.equal(await store.addCustomCertificate(row("c3", "z1", 3), 2), false, "the zone's cap");
    assert.equal(await store.addCustomCertificate(row("c4", "z2", 4), 2), true, "another zone has its own");
    assert.deepEqual(await store.customCertificates(), [row("c1", "z1", 1), row("c2", "z1", 2), row("c4", "z2", 4)]);
    const replaced = { ...row("c1", "z1", 1), hosts: ["www.example.com"], certPem: "pem-new", modifiedOn: 10 };
    assert.equal(await store.replaceCustomCertificate({ ...replaced, zoneId: "z2" }), false, "not through another zone");
    assert.equal(await store.replaceCustomCertificate(replaced), true);
    assert.deepEqual((await store.customCertificates())[0], replaced);
    assert.equal(await store.deleteCustomCertificate("z2", "c2"), false);
    assert.equal(await store.deleteCustomCertificate("z1", "c2"), true);
    assert.equal(await store.deleteZoneCustomCertificates("z1"), 1);
    assert.deepEqual(
      (await store.customCertificates()).map((c) => c.id),
      ["c4"],
    );
  });
});
