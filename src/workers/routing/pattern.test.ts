import assert from "node:assert/strict";
import { test } from "node:test";
import { parsePattern, RouteIndex, type ParsedPattern } from "./pattern.js";

const parsed = (p: string) => {
  const r = parsePattern(p);
  if (typeof r === "string") throw new Error(`${p}: ${r}`);
  return r;
};

test("patterns: scheme optional, * only at the start of the host and the end of the path, no query or port", () => {
  assert.deepEqual(parsed("example.com/*"), { host: "example.com", hostMatch: "exact", path: "/", pathPrefix: true } satisfies ParsedPattern);
  assert.deepEqual(parsed("https://*.Example.com/images/*"), { host: "example.com", hostMatch: "subdomains", path: "/images/", pathPrefix: true });
  assert.deepEqual(parsed("http://*example.com/a"), { host: "example.com", hostMatch: "host-and-subdomains", path: "/a", pathPrefix: false });
  for (const bad of [
    "example.com",
    "ex*ample.com/*",
    "example.com/*.jpg",
    "example.com/?a=*",
    "example.com:8080/*",
    "*/*",
    "a..b/*",
    "localhost/*",
    "ftp://example.com/*",
  ]) {
    assert.equal(typeof parsePattern(bad), "string", bad);
  }
});

test("matching: most specific wins (custom domain, exact host, longer wildcard suffix; exact path, longer prefix); query counts", () => {
  const t = (script: string | null) => ({ accountId: "a", script });
  const index = new RouteIndex(
    [
      { pattern: parsed("*example.com/*"), target: t("everything") },
      { pattern: parsed("*.example.com/*"), target: t("subs") },
      { pattern: parsed("www.example.com/*"), target: t("www") },
      { pattern: parsed("www.example.com/api/*"), target: t("api") },
      { pattern: parsed("www.example.com/api/static/*"), target: t(null) },
      { pattern: parsed("www.example.com/exact"), target: t("exact") },
      { pattern: parsed("*.deep.example.com/*"), target: t("deep") },
    ],
    [{ hostname: "app.example.com", target: t("domain") }],
  );
  const at = (host: string, path: string) => index.match(host, path)?.script;
  assert.equal(at("example.com", "/x"), "everything");
  assert.equal(at("EXAMPLE.com:8787", "/"), "everything", "case and port do not matter");
  assert.equal(at("other.example.com", "/"), "subs", "*.name over *name for a subdomain");
  assert.equal(at("www.example.com", "/"), "www");
  assert.equal(at("www.example.com.", "/api/v1?q=1"), "api");
  assert.equal(at("www.example.com", "/api/static/x.css"), null, "a route without a Worker turns Workers off there");
  assert.equal(at("www.example.com", "/exact"), "exact");
  assert.equal(at("www.example.com", "/exact?x=1"), "www", "an exact path does not match a query");
  assert.equal(at("a.b.deep.example.com", "/"), "deep");
  assert.equal(at("deep.example.com", "/"), "subs", "*.deep.example.com is for subdomains only");
  assert.equal(at("app.example.com", "/anything"), "domain", "a Custom Domain takes precedence over routes");
  assert.equal(at("example.net", "/"), undefined);
  assert.equal(at("myexample.com", "/"), undefined, "* stands for whole labels here");
  assert.equal(at(undefined as unknown as string, "/"), undefined);
  assert.equal(new RouteIndex([], []).match("example.com", "/"), undefined);
});

test("mayMatch: true for every Host some path of which a route or domain matches (the edge then asks match), false for the others", () => {
  const t = (script: string | null) => ({ accountId: "a", script });
  const index = new RouteIndex(
    [
      { pattern: parsed("www.example.com/api/*"), target: t("api") },
      { pattern: parsed("*.deep.example.com/*"), target: t("deep") },
      { pattern: parsed("*shop.example.net/only/this"), target: t("shop") },
    ],
    [{ hostname: "app.example.org", target: t("domain") }],
  );
  const hosts = [
    "www.example.com",
    "WWW.example.com.:8787",
    "deep.example.com",
    "x.deep.example.com",
    "shop.example.net",
    "a.b.shop.example.net",
    "app.example.org",
  ];
  const paths = ["/", "/api/x", "/only/this", "/x"];
  for (const host of [...hosts, "example.com", "other.example.com", "example.net", "myshop.example.net", "x.app.example.org", ""]) {
    const matchedSomewhere = paths.some((path) => index.match(host, path) !== undefined);
    // Never false where match answers: the edge would go past a Worker that should serve the request.
    if (matchedSomewhere) assert.equal(index.mayMatch(host), true, host);
  }
  for (const host of hosts) assert.equal(index.mayMatch(host), true, host);
  for (const host of ["example.com", "other.example.com", "example.net", "myshop.example.net", "x.app.example.org", "", `${"a.".repeat(200)}deep.example.com`])
    assert.equal(index.mayMatch(host), false, host);
  assert.equal(new RouteIndex([], []).mayMatch("www.example.com"), false);
});

test("matching: a Host longer than a DNS name is no route's, and is not walked label by label", () => {
  const index = new RouteIndex([{ pattern: parsed("*.example.com/*"), target: { accountId: "a", script: "subs" } }], []);
  // Every request not under the workers domain is matched, so any client could send this to any platform with one
  // route: walking its 16,000 suffixes hashed each one (280 ms of the event loop a request here).
  const hostile = `${"a.".repeat(16_000)}example.com`;
  const looked: unknown[] = [];
  const get = Map.prototype.get;
  Map.prototype.get = function (this: Map<unknown, unknown>, key: unknown) {
    looked.push(key);
    return get.call(this, key);
  };
  let script;
  try {
    script = index.match(hostile, "/")?.script;
  } finally {
    Map.prototype.get = get;
  }
  assert.equal(script, undefined, "no DNS name is that long: nothing matches");
  assert.ok(looked.length <= 2, `${looked.length} lookups for one hostile Host`);
  assert.equal(index.match(`${"a.".repeat(100)}example.com`, "/")?.script, "subs", "a long name within 253 characters still matches");
});
