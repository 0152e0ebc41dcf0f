import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { optionValues } from "../../core/cli/option-values.js";
import { certificateServeOptions, readCertificatesConfig } from "./config.js";
import { renewalTime, retryTime } from "./manager.js";

const read = (given: Record<string, unknown>) => readCertificatesConfig(optionValues(new Map(Object.entries(given)), certificateServeOptions));
const DIR = "https://ca.example/directory";

test("TLS for Custom Domains is off without --edge-tls-port; the ACME options alone are refused rather than ignored", () => {
  assert.equal(read({}), undefined);
  assert.throws(() => read({ "acme-directory": DIR }), /only with --edge-tls-port/);
});

test("--edge-tls-port needs an https ACME directory; a bad port, email or CA file is refused with the option's name", () => {
  assert.throws(() => read({ "edge-tls-port": 8443 }), /needs --acme-directory/);
  assert.throws(() => read({ "edge-tls-port": 8443, "acme-directory": "http://ca.example/dir" }), /must be an https:\/\/ URL/);
  assert.throws(() => read({ "edge-tls-port": 70000, "acme-directory": DIR }), /--edge-tls-port must be a port number/);
  assert.throws(() => read({ "edge-tls-port": 8443, "acme-directory": DIR, "acme-email": "nobody" }), /--acme-email must be an email address/);
  assert.throws(() => read({ "edge-tls-port": 8443, "acme-directory": DIR, "acme-ca-file": "/nonexistent/ca.pem" }), /--acme-ca-file .* cannot be read/);
  const dir = mkdtempSync(join(tmpdir(), "edge-tls-config-"));
  try {
    writeFileSync(join(dir, "empty.pem"), "nothing here\n");
    assert.throws(() => read({ "edge-tls-port": 8443, "acme-directory": DIR, "acme-ca-file": join(dir, "empty.pem") }), /holds no PEM certificate/);
    writeFileSync(join(dir, "ca.pem"), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    assert.deepEqual(read({ "edge-tls-port": 0, "acme-directory": DIR, "acme-email": "ops@example.com", "acme-ca-file": join(dir, "ca.pem") }), {
      port: 0,
      handshakeTimeoutMs: 10_000,
      acme: { directoryUrl: DIR, email: "ops@example.com", ca: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" },
      pendingPerAccount: 50,
    });
    assert.throws(() => read({ "edge-tls-port": 8443, "acme-directory": DIR, "acme-pending-per-account": 0 }), /--acme-pending-per-account must be/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("renewal starts when a third of the lifetime is left; retries back off from 1 minute, doubling, to 6 hours", () => {
  const day = 86_400_000;
  assert.equal(renewalTime(0, 90 * day), 60 * day);
  assert.equal(renewalTime(0, 1000), 666, "whole milliseconds (an integer column)");
  assert.deepEqual(
    [1, 2, 3, 10, 30, 1000].map((failures) => retryTime(failures, 0) / 60_000),
    [1, 2, 4, 360, 360, 360],
  );
});
