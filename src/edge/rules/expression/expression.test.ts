import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RuleRequest } from "../../ports.js";
import { extensionOf, RequestFields } from "./fields.js";
import { compileExpression, ExpressionError, MAX_EXPRESSION_LENGTH } from "./parser.js";

const request = (over: Partial<RuleRequest> = {}): RuleRequest => ({
  scheme: "https",
  host: "www.example.com",
  path: "/static/app.JS",
  query: "v=2&b=1",
  method: "GET",
  ...over,
});
const matches = (expression: string, over: Partial<RuleRequest> = {}) => compileExpression(expression).test(new RequestFields(request(over)));
const refusal = (expression: string) => {
  try {
    compileExpression(expression);
  } catch (err) {
    assert.ok(err instanceof ExpressionError, String(err));
    return err.message;
  }
  assert.fail(`${expression} was accepted`);
};

describe("Rules language: parsing (valid expressions)", () => {
  it("every field, operator and function of the hosted language that is built here", () => {
    assert.equal(matches('http.host eq "www.example.com"'), true);
    assert.equal(matches('http.host == "example.com"'), false);
    assert.equal(matches('http.request.uri.path ne "/"'), true);
    assert.equal(matches('http.request.uri.path != "/static/app.JS"'), false);
    assert.equal(matches('http.request.uri.path.extension in {"js" "css"}'), true);
    assert.equal(matches('http.request.uri.path.extension in {"png"}'), false);
    assert.equal(matches('http.request.uri.query contains "b=1"'), true);
    assert.equal(matches('http.request.method in {"GET" "HEAD"}'), true);
    assert.equal(matches('http.request.full_uri eq "https://www.example.com/static/app.JS?v=2&b=1"'), true);
    assert.equal(matches('http.request.full_uri eq "http://a.example/"', { scheme: "http", host: "a.example", path: "/", query: "" }), true);
    assert.equal(matches('starts_with(http.request.uri.path, "/static/")'), true);
    assert.equal(matches('ends_with(http.request.uri.path, ".js")'), false);
    assert.equal(matches('http.request.uri.path matches "^/static/.*\\\\.JS$"'), true);
    assert.equal(matches('http.request.uri.path ~ "app"'), true);
    assert.equal(matches('http.request.uri.path matches r"\\.JS$"'), true);
    assert.equal(matches('http.host matches r#"^www\\."#'), true);
  });

  it("and/or/xor/not with the hosted precedence (not, and, xor, or), symbols and words alike", () => {
    assert.equal(matches('http.host eq "x" or http.host eq "www.example.com" and http.request.method eq "GET"'), true);
    assert.equal(matches('(http.host eq "x" or http.host eq "www.example.com") and http.request.method eq "POST"'), false);
    assert.equal(matches('not http.host eq "x" && !(http.request.method eq "POST")'), true);
    assert.equal(matches('http.host eq "x" || http.request.method eq "GET"'), true);
    assert.equal(matches('http.request.method eq "GET" xor http.host eq "www.example.com"'), false);
    assert.equal(matches('http.request.method eq "GET" ^^ http.host eq "x"'), true);
    assert.equal(matches('http.request.method eq "GET" xor http.host eq "www.example.com" xor http.request.uri.query contains "v"'), true, "three true: odd");
    assert.equal(matches('not not http.host eq "www.example.com"'), true);
  });

  it('string escapes: \\" and \\\\ (hosted); raw strings take their text as it is', () => {
    assert.equal(matches('http.request.uri.query eq "a=\\"b\\"\\\\"', { query: 'a="b"\\' }), true);
    assert.equal(matches('http.request.uri.query eq r"a\\b"', { query: "a\\b" }), true);
    assert.equal(matches('http.request.uri.query eq r#"say "hi""#', { query: 'say "hi"' }), true);
  });

  it("the extension is lowercased and taken from the last segment only", () => {
    assert.equal(extensionOf("/a/Photo.JPG"), "jpg");
    assert.equal(extensionOf("/a.b/c"), "");
    assert.equal(extensionOf("/"), "");
    assert.equal(extensionOf("/x.tar.gz"), "gz");
  });

  it("a long chain of or is flat: it neither recurses when parsed nor when evaluated", () => {
    const terms = Array.from({ length: 150 }, (_, i) => `http.host eq "h${i}"`).join(" or ");
    assert.ok(terms.length <= MAX_EXPRESSION_LENGTH);
    assert.equal(matches(terms, { host: "h149" }), true);
    assert.equal(matches(terms, { host: "h150" }), false);
  });
});

describe("Rules language: refusals name what and where", () => {
  const cases: [string, string][] = [
    [
      'http.cookie eq "a"',
      'Filter parsing error (1:1): unknown field "http.cookie": the fields here are http.host, http.request.uri.path, http.request.uri.path.extension, http.request.uri.query, http.request.method, http.request.full_uri',
    ],
    [
      'http.host eq "a" and ip.src eq "1"',
      'Filter parsing error (1:22): unknown field "ip.src": the fields here are http.host, http.request.uri.path, http.request.uri.path.extension, http.request.uri.query, http.request.method, http.request.full_uri',
    ],
    ['lower(http.host) eq "a"', 'Filter parsing error (1:1): unknown function "lower": the functions here are starts_with, ends_with'],
    ['http.host lt "a"', 'Filter parsing error (1:11): the operator "lt" is not supported here: the operators are eq, ne, in, contains, matches'],
    ['http.host wildcard "*.a"', 'Filter parsing error (1:11): the operator "wildcard" is not supported here: the operators are eq, ne, in, contains, matches'],
    ['http.host equals "a"', 'Filter parsing error (1:11): unknown operator "equals": the operators are eq, ne, in, contains, matches'],
    ["http.host", "Filter parsing error (1:10): unexpected end of expression"],
    ['http.host eq "a" and', "Filter parsing error (1:21): unexpected end of expression"],
    ['(http.host eq "a"', "Filter parsing error (1:18): unexpected end of expression"],
    ['http.host eq "a")', 'Filter parsing error (1:17): unexpected ")"'],
    ['http.host eq "a" http.host eq "b"', 'Filter parsing error (1:18): unexpected "http.host"'],
    ["http.host eq 5", 'Filter parsing error (1:14): unexpected "5"'],
    ["http.host in $hosts", 'Filter parsing error (1:14): lists ("$hosts") are not supported here'],
    ["http.host in {}", 'Filter parsing error (1:15): unexpected "}"'],
    ['http.host eq "abc', "Filter parsing error (1:14): unterminated string"],
    ['http.host eq "a\\nb"', 'Filter parsing error (1:16): invalid escape "\\\\n" in a string: the escapes are \\" and \\\\'],
    ['http.host eq "a" and\nhttp.request.uri.path[0] eq "x"', 'Filter parsing error (2:22): unexpected character "["'],
    ['http.host matches "(a"', 'Filter parsing error (1:19): invalid regular expression "(a": error parsing regexp: missing closing ): `(a`'],
    [
      'http.host matches "(?=a)"',
      'Filter parsing error (1:19): invalid regular expression "(?=a)": error parsing regexp: invalid or unsupported Perl syntax: `(?=`',
    ],
    ['http.host matches "a\\\\1"', 'Filter parsing error (1:19): invalid regular expression "a\\\\1": error parsing regexp: invalid escape sequence: `\\1`'],
    ["", "Filter parsing error (1:1): the expression is empty"],
    ['starts_with(http.host "a")', 'Filter parsing error (1:23): unexpected "\\"a\\""'],
    [
      'starts_with(http.agent, "a")',
      'Filter parsing error (1:13): unknown field "http.agent": the fields here are http.host, http.request.uri.path, http.request.uri.path.extension, http.request.uri.query, http.request.method, http.request.full_uri',
    ],
    [
      'HTTP.HOST eq "a"',
      'Filter parsing error (1:1): unknown field "HTTP.HOST": the fields here are http.host, http.request.uri.path, http.request.uri.path.extension, http.request.uri.query, http.request.method, http.request.full_uri',
    ],
  ];
  for (const [expression, message] of cases) it(JSON.stringify(expression), () => assert.equal(refusal(expression), message));
});

describe("Rules language: bounded input", () => {
  it("an expression over the hosted 4,096 characters is refused before it is read", () => {
    const long = `http.host eq "${"a".repeat(MAX_EXPRESSION_LENGTH)}"`;
    assert.equal(refusal(long), `Filter parsing error (1:1): the expression is ${long.length} characters long; at most 4096 are allowed`);
  });

  it("deep nesting is refused with its position, never a stack overflow", () => {
    assert.equal(
      refusal(`${"(".repeat(65)}http.host eq "a"${")".repeat(65)}`),
      "Filter parsing error (1:65): the expression nests deeper than 64 levels of parentheses and not",
    );
    assert.equal(
      refusal(`${"not ".repeat(65)}http.host eq "a"`),
      "Filter parsing error (1:257): the expression nests deeper than 64 levels of parentheses and not",
    );
    assert.equal(
      refusal(`${"!(".repeat(40)}http.host eq "a"${")".repeat(40)}`),
      "Filter parsing error (1:65): the expression nests deeper than 64 levels of parentheses and not",
    );
    assert.equal(matches(`${"(".repeat(60)}http.host eq "www.example.com"${")".repeat(60)}`), true);
  });

  it("regular expressions are RE2 (linear time): a catastrophic pattern for backtracking engines answers at once", () => {
    const predicate = compileExpression('http.request.uri.path matches "^(a+)+$"').test;
    const fields = new RequestFields(request({ path: `${"a".repeat(16_000)}!` }));
    const started = process.hrtime.bigint();
    assert.equal(predicate(fields), false);
    // Measured, not asserted as a time: RE2 takes milliseconds where a backtracking engine takes longer than the test run.
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    assert.ok(ms < 60_000, `${ms} ms`);
  });

  it("a regular expression larger than the bound, or repeats RE2 refuses, are refused", () => {
    assert.match(
      refusal('http.host matches "(a{1000}){1000}"'),
      /^Filter parsing error \(1:19\): invalid regular expression "\(a\{1000\}\)\{1000\}": error parsing regexp: invalid repeat count/,
    );
    assert.equal(
      refusal('http.host matches "a{1000}b{1000}c{1000}"'),
      'Filter parsing error (1:19): the regular expression "a{1000}b{1000}c{1000}" is too large (3002 RE2 instructions, at most 500)',
    );
  });
});
