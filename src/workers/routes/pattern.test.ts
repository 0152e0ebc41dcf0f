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
