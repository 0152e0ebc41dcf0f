import assert from "node:assert/strict";
import { test } from "node:test";
import { extractExamples, IdMap, markerProblem, matchOutput, parseTranscript } from "./doc-examples.js";

test("extractExamples: marked blocks and runnable-looking unmarked ones; plain text blocks are left alone", () => {
  const md = [
    "<!-- example: run -->",
    "```sh",
    "edgecli whoami",
    "```",
    "```",
    "some layout",
    "```",
    "```",
    "$ edgecli kv namespace list",
    "```",
    "<!-- example: skip needs a second machine -->",
    "```js",
    "x()",
    "```",
  ].join("\n");
  const found = extractExamples("doc.md", md);
  assert.deepEqual(
    found.map((e) => [e.line, e.kind, e.arg]),
    [
      [2, "run", undefined],
      [8, undefined, undefined],
      [12, "skip", "needs a second machine"],
    ],
  );
  assert.match(markerProblem(found[1])!, /doc\.md:8: a runnable-looking block without/);
  assert.equal(markerProblem(found[0]), undefined);
  assert.match(markerProblem({ ...found[2], arg: undefined })!, /needs a reason/);
});

test("matchOutput: the doc's lines in order, … as any text, ids learnt and reused, times as any time", () => {
  const ids = new IdMap();
  const out = 'noise\nid = "0123456789abcdef0123456789abcdef"\n  "expiration": "2030-01-02T03:04:05.000Z",\ndone in 12 ms\n';
  assert.equal(
    matchOutput(['id = "5886d0f52c527da9e2859856d098e597"', "…", '  "expiration": "2026-11-22T00:22:35.000Z",', "done in … ms"], out, ids),
    undefined,
  );
  assert.equal(ids.apply("--namespace-id 5886d0f52c527da9e2859856d098e597"), "--namespace-id 0123456789abcdef0123456789abcdef");
  // Drift: a changed message, or lines out of order, are reported with the doc's line.
  assert.equal(matchOutput(["done in … ms", "noise"], out, new IdMap()), "noise");
  assert.equal(matchOutput(["Success! Wrote 3 pairs."], "Success! Wrote 3 key-value pairs.\n", new IdMap()), "Success! Wrote 3 pairs.");
});

test("parseTranscript: each $ command with the lines shown after it", () => {
  assert.deepEqual(parseTranscript("$ a\nout 1\nout 2\n$ b"), [
    { command: "a", expected: ["out 1", "out 2"] },
    { command: "b", expected: [] },
  ]);
});
