import assert from "node:assert/strict";
import { after, before, describe, it, test } from "node:test";
import { request } from "undici";
import Cloudflare from "cloudflare";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { loopbackBlock } from "../testing/origins.js";
import { PURGE_PLANS, PurgeLimits } from "./purge-limits.js";
import { startScriptedOrigin } from "./testing/origin.js";

/** The buckets on an explicit clock: every plan's numbers, URLs counted per URL, accounts apart. */
test("purge limits count as the hosted plans do, per account", () => {
  const t0 = 1_000_000;
  for (const [plan, limits] of Object.entries(PURGE_PLANS)) {
    const l = new PurgeLimits(plan as keyof typeof PURGE_PLANS);
    for (let i = 0; i < limits.requestBucket; i++) assert.equal(l.take("a", { kind: "tags", tags: ["x"] }, t0), 0, `${plan}: ${i}`);
    const wait = l.take("a", { kind: "hosts", hosts: ["h"] }, t0);
    assert.ok(wait >= 1, `${plan}: the bucket is empty, wait ${wait}`);
    assert.equal(l.take("b", { kind: "everything" }, t0), 0, `${plan}: another account has its own bucket`);
    assert.equal(l.take("a", { kind: "prefixes", prefixes: ["h/"] }, t0 + Math.ceil(1000 / limits.requestsPerSecond)), 0, `${plan}: refilled`);
    // URLs: one second's worth at once (a URL without scheme is one URL, though it names two keys).
    const urls = (n: number, from = 0) => ({ kind: "urls" as const, urls: Array.from({ length: n }, (_, i) => `http://h/${from + i}`) });
    for (let sent = 0; sent + 100 <= limits.urlsPerSecond; sent += 100) assert.equal(l.take("a", urls(100, sent), t0), 0);
    assert.ok(l.take("a", urls(100), t0) >= 1, `${plan}: over ${limits.urlsPerSecond} URLs in a second`);
    assert.equal(l.take("a", urls(100), t0 + 1000), 0, `${plan}: a second later`);
    assert.equal(l.take("a", { kind: "urls", urls: ["http://h/x", "https://h/x", "http://h/x\ngzip"] }, t0 + 2000), 0);
  }
  const free = new PurgeLimits("free");
  assert.equal(free.take("a", { kind: "urls", urls: Array.from({ length: 800 }, (_, i) => `http://h/${i}`) }, t0), 0);
  assert.ok(free.take("a", { kind: "urls", urls: ["http://h/one-more"] }, t0) >= 1);
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
});
