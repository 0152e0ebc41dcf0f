import assert from "node:assert/strict";
import { test } from "node:test";
import { cacheKeyQuery, normalTarget } from "./policy.js";

test("a Cache Rule's cache_key shapes the key's query: include, exclude, all, and order ignored", () => {
  assert.equal(cacheKeyQuery("b=2&a=1", undefined), "b=2&a=1", "no rule: the query as sent");
  assert.equal(cacheKeyQuery("b=2&a=1", { ignore_query_strings_order: true }), "a=1&b=2");
  assert.equal(cacheKeyQuery("utm_source=x&id=7&ref=y", { custom_key: { query_string: { include: ["id"] } } }), "id=7");
  assert.equal(cacheKeyQuery("utm_source=x&id=7", { custom_key: { query_string: { exclude: ["utm_source"] } } }), "id=7");
  assert.equal(cacheKeyQuery("a=1&b=2", { custom_key: { query_string: { exclude: "*" } } }), "");
  assert.equal(cacheKeyQuery("a=1&b=2", { custom_key: { query_string: { include: "*" } } }), "a=1&b=2");
  assert.equal(cacheKeyQuery("z=1&a%20b=2", { custom_key: { query_string: { include: ["a b", "z"] } }, ignore_query_strings_order: true }), "a%20b=2&z=1");
  assert.equal(cacheKeyQuery("bad=%zz&id=1", { custom_key: { query_string: { exclude: ["bad"] } } }), "id=1", "a malformed escape is compared as written");
});

test("only the spelling a purge by URL names is cached: dot and empty segments, needless or lower-case escapes are not", () => {
  for (const path of ["/", "/app.js", "/a/b.c/x.js", "/a.b/.well-known/x.js", "/%20x.js", "/caf%C3%A9.js", "/a%2Fb.js", "/it's.js", "/x..js", "/a/...js"])
    assert.equal(normalTarget(path, ""), true, path);
  for (const path of [
    "/a/../x.js",
    "/./x.js",
    "/a/.",
    "/a/..",
    "//x.js",
    "/a//x.js",
    "/%78.js",
    "/x%2ejs",
    "/%2e%2e/x.js",
    "/%c3%a9.js",
    "/%zz.js",
    "/%2.js",
    "/a\\x.js",
    "/x{1}.js",
    "/x.js#f",
    '/"x".js',
    "/x|y.js",
  ])
    assert.equal(normalTarget(path, ""), false, path);
  assert.equal(normalTarget("/x.js", "a=1&b=%22&c=%zz"), true, "a query the URL parser keeps as it is");
  for (const query of ['a="1"', "a=<1>", "it's", "a=1#f", "a=\u00e9"]) assert.equal(normalTarget("/x.js", query), false, query);
});
