import assert from "node:assert/strict";
import { test } from "node:test";
import { cacheKeyQuery } from "./policy.js";

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
