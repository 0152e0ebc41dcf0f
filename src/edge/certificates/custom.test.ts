import assert from "node:assert/strict";
import { after, test } from "node:test";
import { EdgeError } from "../../core/errors.js";
import { testCertificates } from "../testing/origins.js";
import { checkCertificate } from "./custom.js";

const certs = testCertificates(["shop.check.example", "*.check.example", "other.example"]);
after(() => certs.dispose());

test("an upload's chain and key are checked: names of the zone only, expired and not yet valid refused, the key never in a message", () => {
  const ok = checkCertificate(certs.signed.cert + certs.caPem, certs.signed.key, "check.example");
  assert.deepEqual(ok.hosts, ["shop.check.example", "*.check.example"], "only the zone's names are served for it");
  assert.equal(ok.certPem.match(/BEGIN CERTIFICATE/g)?.length, 2, "the chain is kept");
  const refusal = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      assert.ok(err instanceof EdgeError);
      assert.equal(err.status, 400);
      assert.ok(!err.message.includes("PRIVATE KEY"));
      return err.message;
    }
    assert.fail("not refused");
  };
  const days = 86_400_000;
  assert.match(
    refusal(() => checkCertificate(certs.signed.cert, certs.signed.key, "check.example", Date.now() + 5 * days)),
    /expired/,
  );
  assert.match(
    refusal(() => checkCertificate(certs.signed.cert, certs.signed.key, "check.example", Date.now() - 5 * days)),
    /not valid before/,
  );
  assert.match(
    refusal(() => checkCertificate(certs.signed.cert, certs.selfSigned.key, "check.example")),
    /does not match/,
  );
  assert.match(
    refusal(() => checkCertificate(certs.caPem + certs.signed.cert, certs.signed.key, "check.example")),
    /does not match|did not issue/,
  );
  assert.match(
    refusal(() => checkCertificate(certs.signed.cert + certs.selfSigned.cert, certs.signed.key, "check.example")),
    /did not issue/,
  );
  assert.match(
    refusal(() => checkCertificate(certs.signed.cert, certs.signed.key, "elsewhere.example")),
    /names no host of the zone/,
  );
  assert.match(
    refusal(() => checkCertificate(certs.signed.cert, "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----", "check.example")),
    /could not be parsed/,
  );
});
