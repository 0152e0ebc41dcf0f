import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, it, test } from "node:test";
import { request } from "undici";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { loopbackBlock } from "../testing/origins.js";
import { sqliteStoreFactory } from "../../core/testing/contract.js";
import { perRequestLimits, PURGE_PLANS, PurgeLimits, type PurgePlan } from "./purge-limits.js";
import { SqlitePurgeLimitStore } from "./purge-limits-sqlite.js";
import { PURGE_LIMITS_MIGRATIONS } from "./purge-limits-store.js";
import { parsePurge } from "./purge.js";
import { startScriptedOrigin } from "./testing/origin.js";

/** The buckets on an explicit clock, in a real SQLite store: every plan's numbers, URLs counted per URL, accounts apart. */
test("purge limits count as the hosted plans do, per account", async () => {
  const t0 = 1_000_000;
  for (const [plan, limits] of Object.entries(PURGE_PLANS)) {
    const opened = await sqliteStoreFactory(PURGE_LIMITS_MIGRATIONS, (db) => new SqlitePurgeLimitStore(db))();
    const l = new PurgeLimits(plan as PurgePlan, opened.store);
    for (let i = 0; i < limits.requestBucket; i++) assert.equal(await l.take("a", { kind: "tags", tags: ["x"] }, t0), 0, `${plan}: ${i}`);
    const wait = await l.take("a", { kind: "hosts", hosts: ["h"] }, t0);
    assert.ok(wait >= 1, `${plan}: the bucket is empty, wait ${wait}`);
    assert.equal(await l.take("b", { kind: "everything" }, t0), 0, `${plan}: another account has its own bucket`);
    assert.equal(await l.take("a", { kind: "prefixes", prefixes: ["h/"] }, t0 + Math.ceil(1000 / limits.requestsPerSecond)), 0, `${plan}: refilled`);
    // URLs: one second's worth at once (a URL without scheme is one URL, though it names two keys).
    const urls = (n: number, from = 0) => ({ kind: "urls" as const, urls: Array.from({ length: n }, (_, i) => `http://h/${from + i}`) });
    for (let sent = 0; sent + 100 <= limits.urlsPerSecond; sent += 100) assert.equal(await l.take("a", urls(100, sent), t0), 0);
    assert.ok((await l.take("a", urls(100), t0)) >= 1, `${plan}: over ${limits.urlsPerSecond} URLs in a second`);
    assert.equal(await l.take("a", urls(100), t0 + 1000), 0, `${plan}: a second later`);
    assert.equal(await l.take("a", { kind: "urls", urls: ["http://h/x", "https://h/x", "http://h/x\ngzip"] }, t0 + 2000), 0);
    opened.close();
  }
  const opened = await sqliteStoreFactory(PURGE_LIMITS_MIGRATIONS, (db) => new SqlitePurgeLimitStore(db))();
  const free = new PurgeLimits("free", opened.store);
  assert.equal(await free.take("a", { kind: "urls", urls: Array.from({ length: 800 }, (_, i) => `http://h/${i}`) }, t0), 0);
  assert.ok((await free.take("a", { kind: "urls", urls: ["http://h/one-more"] }, t0)) >= 1);
  opened.close();
});

/** Items per request as hosted: 100 of each kind on every plan, but 500 URLs on Enterprise; the 400 names the limit. */
test("purge items per request follow the plan: Enterprise takes 500 URLs, every plan 100 tags, hosts or prefixes", () => {
  const files = (n: number) => ({ files: Array.from({ length: n }, (_, i) => `https://www.z.example/${i}`) });
  for (const plan of Object.keys(PURGE_PLANS) as PurgePlan[]) {
    const perRequest = perRequestLimits(plan);
    const maxFiles = plan === "enterprise" ? 500 : 100;
    assert.equal(parsePurge(files(maxFiles), "z.example", perRequest).kind, "urls");
    assert.throws(
      () => parsePurge(files(maxFiles + 1), "z.example", perRequest),
      (err: { status: number; errors: { code: number }[]; message: string }) =>
        err.status === 400 && err.errors[0].code === 1015 && err.message === `You may only purge up to ${maxFiles} files per request`,
      plan,
    );
    for (const kind of ["tags", "hosts", "prefixes"]) {
      const items = (n: number) => Array.from({ length: n }, (_, i) => (kind === "tags" ? `t${i}` : kind === "hosts" ? `h${i}.z.example` : `z.example/${i}/`));
      assert.doesNotThrow(() => parsePurge({ [kind]: items(100) }, "z.example", perRequest));
      assert.throws(() => parsePurge({ [kind]: items(101) }, "z.example", perRequest), /You may only purge up to 100 /, `${plan} ${kind}`);
    }
  }
});

/**
 * Against the running platform (plan free, so the bucket refills one purge in 12 s and the counts below do not depend
 * on the machine's speed): `{url, headers}` acting or refused, and the hosted 429, per account.
 */
describe("purge by {url, headers} and the purge rate limits through the API", () => {
  const addr = loopbackBlock();
  let p: TestPlatform;
  let origin: Awaited<ReturnType<typeof startScriptedOrigin>>;
  let zone: string;
  let zoneB: string;
  let tokenB: string;
  const host = "www.purge-limits.example";
  const cleanups: (() => unknown)[] = [];
  /** When the test of the 429 began emptying the bucket of tag purges (the restart test counts refills from then). */
  let emptiedFrom = 0;

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await request(`${p.url}${path}`, { headers: { host, ...headers } });
    await res.body.text();
    return res.headers["cf-cache-status"];
  };

  before(async () => {
    origin = await startScriptedOrigin({ after: (fn) => void cleanups.push(fn) }, addr(1));
    p = await startTestPlatform({ args: ["--origin-allow", "127.0.0.0/8", "--cache-purge-plan", "free"] });
    zone = (await p.api("POST", "/zones", { name: "purge-limits.example", account: { id: p.accountId } })).body.result.id;
    const record = await p.api("POST", `/zones/${zone}/dns_records`, { type: "A", name: "www", content: addr(1), proxied: true });
    assert.equal(record.status, 200, JSON.stringify(record.body));
    const accountB = await createAccount(p, "purge-limits-b");
    zoneB = (await p.api("POST", "/zones", { name: "purge-limits-b.example", account: { id: accountB } }, p.keyHeaders())).body.result.id;
    const t = await p.api("POST", "/user/tokens", { name: "b-purge", permissions: ["cache_purge"], account_id: accountB }, p.keyHeaders());
    assert.equal(t.status, 200, JSON.stringify(t.body));
    tokenB = t.body.result.value;
  });
  after(async () => {
    await p?.dispose();
    for (const fn of cleanups) await fn();
  });

  it("Accept-Encoding names one variant; a header in no key here is refused (400 naming it), and nothing is purged", async () => {
    origin.route("/v.js", (_req, res) => res.writeHead(200, { "content-type": "text/javascript" }).end("v"));
    for (const ae of ["gzip", ""]) {
      await get("/v.js", ae ? { "accept-encoding": ae } : {});
      assert.equal(await get("/v.js", ae ? { "accept-encoding": ae } : {}), "HIT", ae);
    }
    const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    const refused = await cf.cache.purge({ zone_id: zone, files: [{ url: `http://${host}/v.js`, headers: { "CF-Device-Type": "mobile" } }] }).then(
      () => undefined,
      (err: unknown) => err as { status: number; errors: { code: number; message: string }[] },
    );
    assert.equal(refused?.status, 400);
    assert.match(refused.errors[0].message, /files\[0\]: the header "CF-Device-Type" is in no cache key here/);
    for (const headers of [
      { "Accept-Language": "en" },
      { "CF-IPCountry": "US" },
      { Origin: "https://a.example" },
      { "accept-encoding": "gzip", "X-Other": "1" },
    ]) {
      const r = await p.api("POST", `/zones/${zone}/purge_cache`, { files: [{ url: `http://${host}/v.js`, headers }] });
      assert.equal(r.status, 400, JSON.stringify(headers));
      assert.equal(r.body.success, false);
      assert.equal(r.body.errors[0].source.pointer, "/files/0");
    }
    assert.equal(await get("/v.js", { "accept-encoding": "gzip" }), "HIT", "a refused purge removed nothing");
    assert.equal(await get("/v.js"), "HIT");

    const answer = await cf.cache.purge({ zone_id: zone, files: [{ url: `http://${host}/v.js`, headers: { "Accept-Encoding": "gzip, deflate" } }] });
    assert.equal(answer?.id, zone);
    assert.equal(await get("/v.js", { "accept-encoding": "gzip" }), "MISS", "the gzip variant went");
    assert.equal(await get("/v.js"), "HIT", "the identity variant stays");
    const plain = await p.api("POST", `/zones/${zone}/purge_cache`, { files: [{ url: `http://${host}/v.js`, headers: {} }] });
    assert.equal(plain.status, 200);
    assert.equal(await get("/v.js"), "MISS", "no headers: every variant");
  });

  it("answers the hosted 429 past the plan's bucket, per account, and purges nothing then", async () => {
    origin.route("/limited.css", (_req, res) => res.writeHead(200, { "cache-tag": "limited" }).end("l"));
    // The previous test's purges were by URL (another bucket): this account has its 25 tag purges.
    emptiedFrom = Date.now();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => p.api("POST", `/zones/${zone}/purge_cache`, { tags: [`t${i}`] })));
    const ok = answers.filter((r) => r.status === 200).length;
    const limited = answers.filter((r) => r.status === 429);
    assert.ok(ok >= 25 && ok <= 26, `${ok} of 30 answered 200`);
    assert.equal(limited.length, 30 - ok);
    assert.deepEqual(limited[0].body.errors, [
      { code: 1134, message: "Unable to purge, rate limit reached. Please wait and consider throttling your request speed" },
    ]);
    assert.equal(limited[0].body.success, false);
    const raw = await request(`${p.apiUrl}/zones/${zone}/purge_cache`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.token}`, "content-type": "application/json" },
      body: JSON.stringify({ hosts: [host] }),
    });
    assert.equal(raw.statusCode, 429);
    assert.match(String(raw.headers["retry-after"]), /^\d+$/);
    await raw.body.text();

    await get("/limited.css");
    assert.equal(await get("/limited.css"), "HIT");
    const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
    const err = await cf.cache.purge({ zone_id: zone, tags: ["limited"] }).then(
      () => undefined,
      (e: unknown) => e as { status: number; constructor: { name: string } },
    );
    assert.equal(err?.status, 429);
    assert.equal(err.constructor.name, "RateLimitError");
    assert.equal(await get("/limited.css"), "HIT", "a refused purge removed nothing");

    // Account B has its own bucket; purges by URL have theirs.
    const b = await p.api("POST", `/zones/${zoneB}/purge_cache`, { purge_everything: true }, { authorization: `Bearer ${tokenB}` });
    assert.equal(b.status, 200, JSON.stringify(b.body));
    const byUrl = await p.api("POST", `/zones/${zone}/purge_cache`, { files: [`http://${host}/limited.css`] });
    assert.equal(byUrl.status, 200, JSON.stringify(byUrl.body));
    assert.equal(await get("/limited.css"), "MISS");
  });

  it("the buckets hold across a restart (embedded: counted in <state>/db/edge-purge-limits.sqlite), as hosted ones do not start over", async () => {
    // The previous test emptied this account's bucket of tag purges. A restart that forgot it would give 25 again.
    assert.ok(emptiedFrom > 0, "runs after the test of the 429");
    const stateDir = p.stateDir;
    await p.stop();
    p = await startTestPlatform({ stateDir, credentials: p, args: ["--origin-allow", "127.0.0.0/8", "--cache-purge-plan", "free"] });
    cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => p.api("POST", `/zones/${zone}/purge_cache`, { tags: [`r${i}`] })));
    const ok = answers.filter((r) => r.status === 200).length;
    // Free refills one purge every 12 s: at most those since the bucket was emptied (a fresh bucket would take all 10).
    const refilled = 2 + Math.floor((Date.now() - emptiedFrom) / 12_000);
    assert.ok(ok <= refilled && ok < 10, `${ok} of 10 answered 200 after the restart (at most ${refilled} refilled)`);
    assert.equal(answers.filter((r) => r.status === 429).length, 10 - ok);
  });
});

test("Enterprise (--cache-purge-plan enterprise): 500 URLs in one purge through the API, 501 refused with the hosted 1015", async (t) => {
  const p = await startTestPlatform({ args: ["--cache-purge-plan", "enterprise"] });
  t.after(() => p.dispose());
  const zone = (await p.api("POST", "/zones", { name: "purge-enterprise.example", account: { id: p.accountId } })).body.result.id;
  const files = (n: number) => Array.from({ length: n }, (_, i) => `https://www.purge-enterprise.example/${i}`);
  const cf = new Cloudflare({ apiToken: p.token, baseURL: p.apiUrl, maxRetries: 0 });
  assert.equal((await cf.cache.purge({ zone_id: zone, files: files(500) }))?.id, zone);
  const refused = await p.api("POST", `/zones/${zone}/purge_cache`, { files: files(501) });
  assert.equal(refused.status, 400);
  assert.deepEqual(refused.body.errors, [{ code: 1015, message: "You may only purge up to 500 files per request", source: { pointer: "/files" } }]);
  const tags = await p.api("POST", `/zones/${zone}/purge_cache`, { tags: Array.from({ length: 101 }, (_, i) => `t${i}`) });
  assert.equal(tags.status, 400, "tags stay at 100 a request on Enterprise");
  assert.equal(tags.body.errors[0].message, "You may only purge up to 100 tags per request");
});
