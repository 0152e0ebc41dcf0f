import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import type { TestPlatform } from "../../core/testing/platform.js";
import { createAccount, hit, startPlatform } from "../testing/helpers.js";
import { eventually } from "../../core/testing/eventually.js";

/**
 * The requests Terraform's cloudflare provider v5 sends for Workers, as its source builds them
 * (internal/services/workers_script, workers_route, workers_custom_domain, workers_cron_trigger):
 * - cloudflare_workers_script: `PUT …/workers/scripts/{n}` as multipart written by Go's mime/multipart: the code
 *   part first (named and filed as main_module, `application/javascript+module`), then a `metadata` part with no
 *   file name and `application/json`, holding the metadata model (its defaults: logpush false, usage_model
 *   "standard"). A refresh reads `GET …/workers/services/{n}` (default_environment.script), `GET …/scripts/{n}/settings`
 *   and `GET …/scripts/{n}/content/v2` (the code, compared with `content`).
 * - cloudflare_workers_route: the model as JSON; an update is a PUT of it, a removed `script` sent as null.
 * - cloudflare_workers_custom_domain: `PUT /accounts/{a}/workers/domains` for create and update, GET and DELETE by id.
 * - cloudflare_workers_cron_trigger: `PUT …/schedules` with the list `[{"cron": …}]`, read back in full.
 * The provider itself is not run here.
 */

/** A body as Go's multipart.Writer writes it, parts in order, each with its own headers. */
function goMultipart(parts: { disposition: string; contentType: string; body: string }[]): { contentType: string; body: Buffer } {
  const boundary = randomBytes(30).toString("hex");
  const chunks = parts.map((p) => `--${boundary}\r\nContent-Disposition: ${p.disposition}\r\nContent-Type: ${p.contentType}\r\n\r\n${p.body}\r\n`);
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.from(chunks.join("") + `--${boundary}--\r\n`) };
}

/** The provider's upload of a module Worker (workers_script MarshalMultipart). */
function providerUpload(mainModule: string, content: string, metadata: Record<string, unknown>) {
  return goMultipart([
    { disposition: `form-data; name="${mainModule}"; filename="${mainModule}"`, contentType: "application/javascript+module", body: content },
    { disposition: 'form-data; name="metadata"', contentType: "application/json", body: JSON.stringify(metadata) },
  ]);
}

describe("Terraform provider v5: Workers scripts, routes, Custom Domains, cron triggers", () => {
  let p: TestPlatform;
  let otherAccount: string;
  let kvId: string;
  const scripts = () => `/accounts/${p.accountId}/workers/scripts`;
  const code = `export default { fetch(req, env) { return new Response(env.GREETING + " from tf"); } };`;

  const put = async (name: string, content: string, metadata: Record<string, unknown>, account = p.accountId, headers = p.headers()) => {
    const { contentType, body } = providerUpload("worker.mjs", content, metadata);
    const res = await fetch(`${p.apiUrl}/accounts/${account}/workers/scripts/${name}`, {
      method: "PUT",
      headers: { ...headers, "content-type": contentType },
      body,
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  before(async () => {
    p = await startPlatform();
    otherAccount = await createAccount(p, "tf-other");
    kvId = (await p.api("POST", `/accounts/${p.accountId}/storage/kv/namespaces`, { title: "tf-kv" })).body.result.id;
  });
  after(() => p?.dispose());

  it("cloudflare_workers_script: multipart upload, then services/{n}, settings and content/v2 read back", async () => {
    const metadata = {
      bindings: [
        { name: "GREETING", type: "plain_text", text: "hello" },
        { name: "KV", type: "kv_namespace", namespace_id: kvId },
      ],
      compatibility_date: "2024-09-01",
      logpush: false,
      main_module: "worker.mjs",
      usage_model: "standard",
    };
    const up = await put("tf-worker", code, metadata);
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const r = up.body.result;
    // what the provider reads from the upload's answer (computed fields and unset computed_optional ones)
    assert.equal(r.id, "tf-worker");
    assert.equal(typeof r.etag, "string");
    assert.equal(r.has_modules, true);
    assert.deepEqual(r.handlers, ["fetch"]);
    assert.equal(r.compatibility_date, "2024-09-01");
    assert.deepEqual(r.compatibility_flags, []);
    assert.equal(r.usage_model, "standard");
    assert.equal(typeof r.startup_time_ms, "number");
    assert.match(r.created_on, /^\d{4}-\d{2}-\d{2}T/);
    assert.match(r.modified_on, /^\d{4}-\d{2}-\d{2}T/);
    await eventually(async () => (await hit(p, "tf-worker", "/")).text === "hello from tf", "the uploaded worker serves");

    const service = await p.api("GET", `${scripts().replace("/scripts", "/services")}/tf-worker`);
    assert.equal(service.status, 200, JSON.stringify(service.body));
    const script = service.body.result.default_environment.script;
    assert.equal(script.id, "tf-worker");
    assert.equal(script.etag, r.etag);
    assert.equal(script.created_on, r.created_on);

    const settings = await p.api("GET", `${scripts()}/tf-worker/settings`);
    assert.equal(settings.status, 200, JSON.stringify(settings.body));
    assert.deepEqual(settings.body.result.bindings, metadata.bindings);
    assert.equal(settings.body.result.compatibility_date, "2024-09-01");
    assert.deepEqual(settings.body.result.compatibility_flags, []);
    assert.equal(settings.body.result.logpush, false);
    assert.equal(settings.body.result.usage_model, "standard");

    // content/v2: the code exactly as uploaded (the provider compares it with `content`)
    const content = await fetch(`${p.apiUrl}${scripts()}/tf-worker/content/v2`, { headers: { ...p.headers(), accept: "string" } });
    assert.equal(content.status, 200);
    assert.match(content.headers.get("content-type") ?? "", /^application\/javascript\+module/);
    assert.equal(await content.text(), code);
    // not another account's
    const stranger = await fetch(`${p.apiUrl}/accounts/${otherAccount}/workers/scripts/tf-worker/content/v2`, { headers: p.keyHeaders() });
    assert.equal(stranger.status, 404);
    assert.equal((await fetch(`${p.apiUrl}${scripts()}/no-such/content/v2`, { headers: p.headers() })).status, 404);

    // the update is the same PUT; the content read back is the new one
    const code2 = code.replace("from tf", "from tf, updated");
    const again = await put("tf-worker", code2, metadata);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.result.created_on, r.created_on);
    assert.equal(await (await fetch(`${p.apiUrl}${scripts()}/tf-worker/content/v2`, { headers: p.headers() })).text(), code2);

    // A Worker of several modules (uploaded by another client): multipart, the main module first, which is the part
    // the provider reads
    const helper = `export const word = "helper";`;
    const main = `import { word } from "./helper.mjs"; export default { fetch() { return new Response(word); } };`;
    const many = goMultipart([
      {
        disposition: 'form-data; name="metadata"',
        contentType: "application/json",
        body: JSON.stringify({ main_module: "main.mjs", compatibility_date: "2024-09-01" }),
      },
      { disposition: 'form-data; name="helper.mjs"; filename="helper.mjs"', contentType: "application/javascript+module", body: helper },
      { disposition: 'form-data; name="main.mjs"; filename="main.mjs"', contentType: "application/javascript+module", body: main },
    ]);
    const upMany = await fetch(`${p.apiUrl}${scripts()}/tf-many`, {
      method: "PUT",
      headers: { ...p.headers(), "content-type": many.contentType },
      body: many.body,
    });
    assert.equal(upMany.status, 200, await upMany.text());
    const manyContent = await fetch(`${p.apiUrl}${scripts()}/tf-many/content/v2`, { headers: p.headers() });
    assert.match(manyContent.headers.get("content-type") ?? "", /^multipart\/form-data; boundary=/);
    const parts = [...(await manyContent.formData()).entries()];
    assert.deepEqual(
      parts.map(([name]) => name),
      ["main.mjs", "helper.mjs"],
    );
    assert.equal(await (parts[0][1] as Blob).text(), main);

    // The provider's default compatibility_date is "" (unset in the config): refused with a clear reason, not a 500,
    // and the Worker is as it was
    const undated = await put("tf-worker", code, { ...metadata, compatibility_date: "" });
    assert.equal(undated.status, 400, JSON.stringify(undated.body));
    assert.match(JSON.stringify(undated.body.errors), /compatibility_date/);
    assert.equal(await (await fetch(`${p.apiUrl}${scripts()}/tf-worker/content/v2`, { headers: p.headers() })).text(), code2);
  });

  it("cloudflare_workers_route: create, read, PUT with the script removed (null), delete", async () => {
    const zoneName = `tf${randomBytes(4).toString("hex")}.example`;
    const zone = await p.api("POST", "/zones", { name: zoneName, account: { id: p.accountId } });
    assert.equal(zone.status, 200, JSON.stringify(zone.body));
    const routes = `/zones/${zone.body.result.id}/workers/routes`;
    const created = await p.api("POST", routes, { pattern: `www.${zoneName}/*`, script: "tf-worker" });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const id = created.body.result.id;
    assert.deepEqual(created.body.result, { id, pattern: `www.${zoneName}/*`, script: "tf-worker" });
    assert.deepEqual((await p.api("GET", `${routes}/${id}`)).body.result, created.body.result);

    const unscripted = await p.api("PUT", `${routes}/${id}`, { pattern: `www.${zoneName}/*`, script: null });
    assert.equal(unscripted.status, 200, JSON.stringify(unscripted.body));
    assert.deepEqual(unscripted.body.result, { id, pattern: `www.${zoneName}/*` });
    const rescripted = await p.api("PUT", `${routes}/${id}`, { pattern: `www.${zoneName}/api/*`, script: "tf-worker" });
    assert.equal(rescripted.status, 200, JSON.stringify(rescripted.body));
    assert.deepEqual(rescripted.body.result, { id, pattern: `www.${zoneName}/api/*`, script: "tf-worker" });

    assert.equal((await p.api("DELETE", `${routes}/${id}`)).status, 200);
    assert.equal((await p.api("GET", `${routes}/${id}`)).status, 404);
  });

  it("cloudflare_workers_custom_domain: PUT create and update, GET by id, DELETE", async () => {
    const zoneName = `tfd${randomBytes(4).toString("hex")}.example`;
    const zone = await p.api("POST", "/zones", { name: zoneName, account: { id: p.accountId } });
    assert.equal(zone.status, 200, JSON.stringify(zone.body));
    const domains = `/accounts/${p.accountId}/workers/domains`;
    const created = await p.api("PUT", domains, { hostname: `app.${zoneName}`, service: "tf-worker", zone_id: zone.body.result.id });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const d = created.body.result;
    assert.match(d.id, /^[0-9a-f]{32}$/);
    assert.equal(d.hostname, `app.${zoneName}`);
    assert.equal(d.service, "tf-worker");
    assert.equal(d.environment, "production");
    assert.equal(d.zone_id, zone.body.result.id);
    assert.equal(d.zone_name, zoneName);
    assert.deepEqual((await p.api("GET", `${domains}/${d.id}`)).body.result, d);

    // the update is the same PUT with the whole model (environment and zone fields read back before)
    const updated = await p.api("PUT", domains, {
      hostname: `app.${zoneName}`,
      service: "tf-worker",
      environment: "production",
      zone_id: d.zone_id,
      zone_name: zoneName,
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.result.id, d.id);

    assert.equal((await p.api("GET", `/accounts/${otherAccount}/workers/domains/${d.id}`, undefined, p.keyHeaders())).status, 404);
    assert.equal((await p.api("DELETE", `${domains}/${d.id}`)).status, 200);
    assert.equal((await p.api("GET", `${domains}/${d.id}`)).status, 404);
  });

  it("cloudflare_workers_cron_trigger: PUT of the list, read back in full", async () => {
    const path = `${scripts()}/tf-worker/schedules`;
    const set = await p.api("PUT", path, [{ cron: "*/30 * * * *" }, { cron: "0 3 * * mon" }]);
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.deepEqual(
      set.body.result.schedules.map((s: { cron: string }) => s.cron),
      ["*/30 * * * *", "0 3 * * mon"],
    );
    for (const s of set.body.result.schedules) {
      assert.equal(typeof s.created_on, "string");
      assert.equal(typeof s.modified_on, "string");
    }
    const read = await p.api("GET", path);
    assert.deepEqual(read.body.result, set.body.result);
    // the provider's destroy sends nothing; clearing is a PUT of []
    assert.deepEqual((await p.api("PUT", path, [])).body.result.schedules, []);
  });

  it("cloudflare_workers_script destroy: DELETE …/scripts/{n}, after which the refresh reads find nothing", async () => {
    assert.equal((await p.api("DELETE", `${scripts()}/tf-worker`)).status, 200);
    assert.equal((await p.api("GET", `/accounts/${p.accountId}/workers/services/tf-worker`)).status, 404);
    assert.equal((await fetch(`${p.apiUrl}${scripts()}/tf-worker/content/v2`, { headers: p.headers() })).status, 404);
  });
});
