import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { endLeftovers, extractExamples, IdMap, markerProblem, matchOutput, parseTranscript, platformArgs, serveArgs } from "./doc-examples.js";

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

test("serve blocks: the doc's `edgecli serve` line gives its platform's options; one per doc, before what runs", () => {
  const serve = (body: string, lang = "sh") => extractExamples("doc.md", ["<!-- example: serve -->", "```" + lang, body, "```"].join("\n"))[0];
  const ok = serve("edgecli serve --origin-allow 127.0.0.2   # an origin on loopback");
  assert.equal(ok.kind, "serve");
  assert.equal(markerProblem(ok), undefined);
  assert.deepEqual(serveArgs(ok), ["--origin-allow", "127.0.0.2"]);
  assert.deepEqual(
    platformArgs([ok], (t) => t.replace("127.0.0.2", "127.9.9.2")),
    ["--origin-allow", "127.9.9.2"],
  );
  // Anything but one plain `edgecli serve` line is refused by the marker check, so the test never runs a guess.
  for (const bad of [
    serve("edgecli serve\nedgecli whoami"),
    serve('edgecli serve --x "a b"'),
    serve("edgecli serve $OPTS"),
    serve("npm start"),
    serve("edgecli serve", "js"),
  ]) {
    assert.match(markerProblem(bad)!, /doc\.md:2: <!-- example: serve -->/);
  }
  const run = { ...ok, kind: "run" as const, line: 1 };
  assert.throws(() => platformArgs([run, ok], (t) => t), /comes after a block that ran/);
  assert.throws(() => platformArgs([ok, { ...ok, line: 9 }], (t) => t), /a second <!-- example: serve -->/);
  assert.deepEqual(
    platformArgs([run], (t) => t),
    [],
  );
});

test("endLeftovers ends the processes that hold the run's marker, and only those", async () => {
  const marker = `EDGE_DOC_EXAMPLE_RUN=test-${process.pid}-${Date.now()}`;
  const [name, value] = marker.split("=");
  const ours = spawn("sleep", ["600"], { env: { ...process.env, [name]: value }, stdio: "ignore" });
  const other = spawn("sleep", ["600"], { env: { ...process.env, [name]: `${value}-not` }, stdio: "ignore" });
  try {
    await Promise.all([once(ours, "spawn"), once(other, "spawn")]);
    const exited = once(ours, "exit");
    assert.equal(endLeftovers(marker), 1);
    const [, signal] = await exited;
    assert.equal(signal, "SIGTERM");
    assert.equal(other.exitCode, null);
    assert.equal(other.signalCode, null);
  } finally {
    ours.kill();
    other.kill();
  }
});
