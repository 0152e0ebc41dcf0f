import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { readFileSync } from "node:fs";
import { ALL_PERMISSIONS } from "./core/auth/permissions.js";
import { randomBytes } from "node:crypto";
import { endLeftovers, IdMap, markerProblem, platformArgs, readExamples, runExample, type DocExample } from "./core/testing/doc-examples.js";
import { loopbackBlock } from "./edge/testing/origins.js";
import { CLI_PATH, startTestPlatform } from "./core/testing/platform.js";
import { startMockProvider, type MockProvider } from "./ai-gateway/testing/mock-provider.js";

// The documentation's examples, run against a started platform (see core/testing/doc-examples.ts for the markers):
// an example that drifts from the code fails here. Each document's examples run in order, in a directory of their
// own against a platform of their own, with `edgecli` on PATH (as `npm install -g .` puts it) and the document's
// 127.0.0.1:8787 (and the DNS port of `dig @127.0.0.1 -p 1053`) turned into that platform's. The examples directory is
// copied in (`cd examples/pastebin` works as in the checkout, and what a block changes there stays in the copy). The
// internet is the one thing tests may not use: every platform's `openai` provider is a local OpenAI-compatible
// stand-in (ai-gateway/testing/mock-provider.ts), and OPENAI_API_KEY a made-up key for it. A doc whose examples need
// an operator option shows its `edgecli serve …` line in a block marked `serve`: its platform starts with those
// options. The docs' origin address 127.0.0.2 is a loopback address of each doc's own (127.a.b.2), and what a doc's
// blocks left running (its origin) is ended after them.
const root = fileURLToPath(new URL("..", import.meta.url));
const docs = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  ...readdirSync(join(root, "examples"))
    .map((d) => `examples/${d}/README.md`)
    .filter((f) => {
      try {
        readdirSync(join(root, f, ".."));
        return readdirSync(join(root, f, "..")).includes("README.md");
      } catch {
        return false;
      }
    }),
];
const examples = readExamples(root, docs);

test("every runnable-looking block of the docs is marked run, file, skip (with a reason) or todo", (t) => {
  const problems = examples.map(markerProblem).filter((p): p is string => p !== undefined);
  assert.deepEqual(problems, []);
  const count = (kind: string) => examples.filter((e) => e.kind === kind).length;
  t.diagnostic(`${count("run")} run, ${count("file")} files, ${count("skip")} skipped with a reason, ${count("todo")} not run yet (todo)`);
});

test("docs/api.md lists exactly the permission groups the platform has", () => {
  const text = readFileSync(join(root, "docs", "api.md"), "utf8");
  const paragraph = /Permission groups \(`GET \/user\/tokens\/permission_groups`\):([^]*?)An `_edit` permission/.exec(text)?.[1];
  assert.ok(paragraph, "the permission paragraph of docs/api.md");
  const listed = [...paragraph.matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1]);
  assert.deepEqual([...listed].sort(), [...ALL_PERMISSIONS].sort());
});

let bin: string;
let provider: MockProvider;
const work: string[] = [];
before(async () => {
  bin = mkdtempSync(join(tmpdir(), "doc-bin-"));
  symlinkSync(CLI_PATH, join(bin, "edgecli"));
  provider = await startMockProvider();
});
after(async () => {
  await provider?.close();
  for (const dir of [bin, ...work]) if (dir) rmSync(dir, { recursive: true, force: true });
});

const byDoc = new Map<string, DocExample[]>();
for (const e of examples) if (e.kind === "run" || e.kind === "file") byDoc.set(e.doc, [...(byDoc.get(e.doc) ?? []), e]);

for (const [doc, list] of byDoc) {
  test(`${doc}: its ${list.length} marked examples run as shown`, { timeout: 600_000 }, async (t) => {
    // The doc's origin on a loopback address of its own: several worktrees run this test at once.
    const originAddress = loopbackBlock()(2);
    const addresses = (text: string) => text.replace(/\b127\.0\.0\.2\b/g, originAddress);
    // A platform of its own: each document starts from nothing, as its reader does (and may name the same bucket),
    // with the options of the doc's `edgecli serve` line.
    const serveOptions = platformArgs(
      examples.filter((e) => e.doc === doc),
      addresses,
    );
    const p = await startTestPlatform({ args: ["--provider-base-url", `openai=${provider.url}`, ...serveOptions] });
    t.after(() => p.dispose());
    const marker = `EDGE_DOC_EXAMPLE_RUN=${randomBytes(8).toString("hex")}`;
    t.after(() => endLeftovers(marker));
    const cwd = mkdtempSync(join(tmpdir(), "doc-example-"));
    work.push(cwd);
    // Examples importing packages (the S3 SDK, ws) find them as in the checkout.
    symlinkSync(join(root, "node_modules"), join(cwd, "node_modules"));
    // Examples that start "from the repository's root" (cd examples/r2-worker) find a copy of the examples there.
    cpSync(join(root, "examples"), join(cwd, "examples"), { recursive: true });
    // Started "from the same directory", as the README's reader does: its credentials are in ./.edge.
    symlinkSync(p.stateDir, join(cwd, ".edge"));
    const envFile = join(cwd, ".example-env");
    writeFileSync(envFile, "");
    mkdirSync(join(cwd, "tmp"));
    const port = new URL(p.url).port;
    // The docs' DNS port (1053, the default) is the test platform's: `dig @127.0.0.1 -p 1053` asks it.
    const dnsPort = p.endpoints.dns_udp.split(":").pop();
    const ctx = {
      cwd,
      envFile,
      env: {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        NO_COLOR: "1",
        EDGE_API_URL: p.apiUrl,
        EDGE_API_TOKEN: p.token,
        EDGE_ACCOUNT_ID: p.accountId,
        EDGE_STATE_DIR: p.stateDir,
        // wrangler, as the docs run it: a home of its own (no login state or logs of the machine's user), no metrics.
        HOME: cwd,
        WRANGLER_SEND_METRICS: "false",
        // npm's update check (wrangler's "update available") goes to a closed port: a test never reaches a registry.
        npm_config_registry: "http://127.0.0.1:9/",
        OPENAI_API_KEY: "sk-doc-example-stand-in",
        // What endLeftovers finds the processes the blocks left running by.
        EDGE_DOC_EXAMPLE_RUN: marker.split("=")[1],
      },
      rewrite: (text: string) =>
        addresses(text.replace(/\b(127\.0\.0\.1|localhost):8787\b/g, `$1:${port}`).replace(/(@127\.0\.0\.1 -p )1053\b/g, `$1${dnsPort}`)),
    };
    const ids = new IdMap();
    for (const e of list) await runExample(e, ctx, ids);
  });
}
