import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startTestPlatform, type TestPlatform } from "../core/testing/platform.js";

/**
 * The requests Terraform's cloudflare provider v5 sends for cloudflare_r2_bucket, as its source builds them
 * (internal/services/r2_bucket/resource.go, model.go, schema.go): create is a POST of `{name, locationHint,
 * storageClass}` (storage_class defaults to "Standard") with the `cf-r2-jurisdiction` header (default "default") on
 * every call; an update is a PATCH without a body, the new class in `cf-r2-storage-class`. It reads name, location,
 * storage_class, creation_date and jurisdiction back. The provider itself is not run here.
 */
describe("Terraform provider v5: R2 buckets", () => {
  let p: TestPlatform;
  let otherAccount: string;
  const buckets = () => `/accounts/${p.accountId}/r2/buckets`;
  const jurisdiction = { "cf-r2-jurisdiction": "default" };

  before(async () => {
    p = await startTestPlatform();
    otherAccount = (await p.api("POST", "/accounts", { name: "Other" }, p.keyHeaders())).body.result.id;
  });
  after(() => p?.dispose());

  it("cloudflare_r2_bucket: create, read, PATCH of the storage class, delete", async () => {
    const created = await p.api("POST", buckets(), { name: "tf-bucket", locationHint: "weur", storageClass: "Standard" }, p.headers(jurisdiction));
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const b = created.body.result;
    assert.equal(b.name, "tf-bucket");
    assert.equal(b.location.toLowerCase(), "weur");
    assert.equal(b.storage_class, "Standard");
    assert.equal(b.jurisdiction, "default");
    assert.equal(typeof b.creation_date, "string");

    const read = await p.api("GET", `${buckets()}/tf-bucket`, undefined, p.headers(jurisdiction));
    assert.deepEqual(read.body.result, b);

    const patched = await p.api("PATCH", `${buckets()}/tf-bucket`, undefined, p.headers({ ...jurisdiction, "cf-r2-storage-class": "InfrequentAccess" }));
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual(patched.body.result, { ...b, storage_class: "InfrequentAccess" });
    assert.equal((await p.api("GET", `${buckets()}/tf-bucket`, undefined, p.headers(jurisdiction))).body.result.storage_class, "InfrequentAccess");

    // Bad input: a class R2 does not have, or no class at all, is a clear 400 and the bucket is as it was
    for (const headers of [{ "cf-r2-storage-class": "Glacier" }, {}] as Record<string, string>[]) {
      const bad = await p.api("PATCH", `${buckets()}/tf-bucket`, undefined, p.headers({ ...jurisdiction, ...headers }));
      assert.equal(bad.status, 400, JSON.stringify(bad.body));
    }
    assert.equal((await p.api("GET", `${buckets()}/tf-bucket`)).body.result.storage_class, "InfrequentAccess");
    // a jurisdiction this platform cannot promise is refused, on the PATCH as on create
    const eu = await p.api("PATCH", `${buckets()}/tf-bucket`, undefined, p.headers({ "cf-r2-jurisdiction": "eu", "cf-r2-storage-class": "Standard" }));
    assert.equal(eu.status, 400, JSON.stringify(eu.body));
    // another account's path does not reach the bucket
    const other = await p.api(
      "PATCH",
      `/accounts/${otherAccount}/r2/buckets/tf-bucket`,
      undefined,
      p.keyHeaders({ ...jurisdiction, "cf-r2-storage-class": "Standard" }),
    );
    assert.equal(other.status, 404, JSON.stringify(other.body));
    assert.equal((await p.api("GET", `${buckets()}/tf-bucket`)).body.result.storage_class, "InfrequentAccess");

    assert.equal((await p.api("DELETE", `${buckets()}/tf-bucket`, undefined, p.headers(jurisdiction))).status, 200);
    assert.equal((await p.api("GET", `${buckets()}/tf-bucket`, undefined, p.headers(jurisdiction))).status, 404);
  });
});
