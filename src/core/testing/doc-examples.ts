import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * The runnable examples of the documentation (README.md, docs/*.md, examples/*\/README.md), so a test can run them
 * against a started platform and a doc that drifts from the code fails the suite.
 *
 * A fenced block is marked by an HTML comment on the line right before its fence:
 * - `<!-- example: run -->`: run it. A `sh` block runs as one bash script (`set -euo pipefail`) and must exit 0;
 *   a transcript (lines starting with `$ ` followed by their output) runs each command, which must exit 1 when its
 *   output shows `✘ [ERROR]` and 0 otherwise, and print the shown lines in that order (`…` stands for any text;
 *   a 32-hex id stands for any id, and the id printed is used wherever the doc uses the shown one afterwards);
 *   a `js` block is written to a `.mjs` file and run with node; a `python` block is written to a `.py` file and run
 *   with python3 (with the packages the machine has: boto3 here, not the openai package).
 * - `<!-- example: file NAME -->`: the block is a file the following examples use (a config), written as NAME
 *   (a relative path: `calc/index.js` makes `calc/`, so each project of a doc can have a directory of its own).
 * - `<!-- example: skip REASON -->`: never run, for the reason given (it needs something a test cannot have).
 * - `<!-- example: todo -->`: runnable, not run by the test yet (counted and printed, so the list shrinks).
 * - `<!-- example: serve -->`: a `sh` block of one `edgecli serve …` command line (and `#` comments): the doc's
 *   platform is started with those options (rewritten as the doc's blocks are; the ports are the test's), so a page
 *   whose examples need an operator option (`--origin-allow` for an origin on loopback) shows the command its reader
 *   runs and the test runs the same. At most one per doc, before its first `run` block.
 * A block that looks runnable (sh, bash, shell, js, mjs, python, or a `$ ` transcript) without a marker is an error.
 *
 * What the blocks find (src/docs-examples.test.ts): a directory of their own holding a copy of examples/ and `.edge`,
 * a link to the platform's state directory (as beside `edgecli serve`); `edgecli` on PATH; EDGE_API_URL,
 * EDGE_API_TOKEN, EDGE_ACCOUNT_ID and EDGE_STATE_DIR of that platform; and OPENAI_API_KEY, a made-up key for the
 * platform's `openai` provider, which is a local OpenAI-compatible stand-in (the internet is out of reach).
 * The doc's origin address 127.0.0.2 (a server a block starts on port 80, as root) is a loopback address of the
 * test's own (127.a.b.2), so worktrees running the test at once do not collide. A process a block leaves running in
 * the background (an origin, with its output sent to a file: bash waits for a background job that holds its
 * stdout) is ended when the doc's examples are done (`endLeftovers`).
 */
export type ExampleKind = "run" | "file" | "skip" | "todo" | "serve";

export interface DocExample {
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  body: string;
  kind?: ExampleKind;
  /** The file name (file) or the reason (skip). */
  arg?: string;
}

const RUNNABLE_LANGS = new Set(["sh", "bash", "shell", "js", "mjs", "python"]);
const MARKER = /^<!--\s*example:\s*(run|file|skip|todo|serve)\b\s*(.*?)\s*-->\s*$/;

export function isTranscript(body: string): boolean {
  return body.split("\n").some((l) => l.startsWith("$ "));
}

/** Every fenced block of a markdown file that is marked or looks runnable. */
export function extractExamples(doc: string, text: string): DocExample[] {
  const lines = text.split("\n");
  const out: DocExample[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(```+)\s*([\w-]*)/.exec(lines[i]);
    if (!open) continue;
    const fence = open[1];
    let end = i + 1;
    while (end < lines.length && !lines[end].startsWith(fence)) end++;
    const body = lines.slice(i + 1, end).join("\n");
    const marker = i > 0 ? MARKER.exec(lines[i - 1]) : null;
    const lang = open[2].toLowerCase();
    if (marker || RUNNABLE_LANGS.has(lang) || (lang === "" && isTranscript(body))) {
      out.push({ doc, line: i + 1, lang, body, kind: marker?.[1] as ExampleKind | undefined, arg: marker?.[2] || undefined });
    }
    i = end;
  }
  return out;
}

export function readExamples(root: string, docs: readonly string[]): DocExample[] {
  return docs.flatMap((d) => extractExamples(d, readFileSync(join(root, d), "utf8")));
}

/** Why a block's marker is wrong, if it is. */
export function markerProblem(e: DocExample): string | undefined {
  const where = `${e.doc}:${e.line}`;
  if (!e.kind) return `${where}: a runnable-looking block without an <!-- example: run|file|skip|todo|serve --> marker`;
  if (e.kind === "serve") {
    try {
      serveArgs(e);
    } catch (err) {
      return `${where}: ${(err as Error).message}`;
    }
  }
  if (e.kind === "skip" && !e.arg) return `${where}: <!-- example: skip --> needs a reason`;
  if (e.kind === "file" && !e.arg) return `${where}: <!-- example: file --> needs a file name`;
  if (e.kind === "run" && !(["sh", "bash", "shell", "js", "mjs", "python"].includes(e.lang) || isTranscript(e.body))) {
    return `${where}: only sh, js, python and $-transcript blocks can be run (this one is "${e.lang || "plain"}")`;
  }
  return undefined;
}

/**
 * The options of a `serve` block's `edgecli serve …` line: words split on spaces (no quoting: an option value with
 * a space has no place in such a line).
 */
export function serveArgs(e: DocExample): string[] {
  const lines = e.body
    .split("\n")
    .map((l) => l.replace(/\s+#.*$/, "").trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  if (e.lang !== "sh" || lines.length !== 1 || !/^edgecli serve(\s|$)/.test(lines[0])) {
    throw new Error("<!-- example: serve --> marks a sh block of one `edgecli serve …` line");
  }
  if (/["'`$\\;&|<>]/.test(lines[0])) throw new Error("<!-- example: serve --> takes plain words: no quotes, variables or shell operators");
  return lines[0].split(/\s+/).slice(2);
}

/** The options a doc's platform starts with: its `serve` block's, rewritten; none without one. */
export function platformArgs(examples: readonly DocExample[], rewrite: (text: string) => string): string[] {
  const serve = examples.filter((e) => e.kind === "serve");
  if (serve.length > 1) throw new Error(`${serve[1].doc}:${serve[1].line}: a second <!-- example: serve --> block (a doc has one platform)`);
  if (serve.length === 0) return [];
  const firstRun = examples.find((e) => e.kind === "run" || e.kind === "file");
  if (firstRun && firstRun.line < serve[0].line) throw new Error(`${serve[0].doc}:${serve[0].line}: <!-- example: serve --> comes after a block that ran`);
  return serveArgs(serve[0]).map(rewrite);
}

/**
 * Ends the processes the doc's blocks left running (an origin started in the background): those whose environment
 * holds `marker`, a variable of this run's own that every block's process inherits. Only this run's processes can
 * hold it, whatever became of their process groups.
 */
export function endLeftovers(marker: string): number {
  let ended = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    if (Number(pid) === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${pid}/environ`, "latin1");
    } catch {
      continue; // gone, or not ours to read
    }
    if (!environ.split("\0").includes(marker)) continue;
    try {
      process.kill(Number(pid), "SIGTERM");
      ended++;
    } catch {
      // ended meanwhile
    }
  }
  return ended;
}

export interface RunContext {
  /** Working directory of the doc's examples (files are written there). */
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Text replacements applied to every block before it runs: the doc's addresses → the test platform's. */
  rewrite(text: string): string;
  /** A file the bash wrapper keeps exported variables in, so one block's `export` reaches the next. */
  envFile: string;
}

export interface CommandResult {
  code: number;
  output: string;
}

/** Runs a bash script in the doc's directory, with what earlier blocks exported; stdout and stderr together. */
export function runBash(ctx: RunContext, script: string, timeoutMs = 120_000): Promise<CommandResult> {
  const wrapped = `set -a; . ${JSON.stringify(ctx.envFile)}; set +a\n${script}\n__status=$?\nexport -p > ${JSON.stringify(ctx.envFile)}\nexit $__status\n`;
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", wrapped], { cwd: ctx.cwd, env: ctx.env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (output += d.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), output });
    });
  });
}

const ID = /\b[0-9a-f]{32}\b/g;
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Ids the doc shows → ids the run printed; applied to every later command and file. */
export class IdMap {
  private readonly map = new Map<string, string>();
  /** The doc's files as the doc shows them: written again whenever an id is learnt. */
  readonly files = new Map<string, string>();
  apply(text: string): string {
    return text.replace(ID, (id) => this.map.get(id) ?? id);
  }
  learn(docId: string, realId: string): void {
    if (!this.map.has(docId)) this.map.set(docId, realId);
  }
}

/**
 * Checks that `expected` (the doc's output lines) appear in `actual` in order; `…` alone is any lines, `…` in a
 * line is any text, a 32-hex id is any id (learnt into `ids`), an ISO 8601 time any time. Returns the first
 * expected line not found.
 */
export function matchOutput(expected: string[], actual: string, ids: IdMap): string | undefined {
  const lines = actual.split("\n").map((l) => l.trimEnd());
  let at = 0;
  for (const raw of expected) {
    const want = ids.apply(raw.trimEnd());
    if (want.trim() === "" || want.trim() === "…") continue;
    const docIds: string[] = [];
    const pattern = new RegExp(
      "^" +
        want
          .split(/(…|\b[0-9a-f]{32}\b|\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)/)
          .map((part) => {
            if (part === "…") return ".*";
            // A time the doc shows stands for any time (expirations, creation times).
            if (/^\d{4}-\d\d-\d\dT/.test(part)) return "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?Z";
            if (/^[0-9a-f]{32}$/.test(part)) {
              docIds.push(part);
              return "([0-9a-f]{32})";
            }
            return escapeRegExp(part);
          })
          .join("") +
        "$",
    );
    let found = false;
    for (; at < lines.length; at++) {
      const m = pattern.exec(lines[at]);
      if (m) {
        docIds.forEach((d, i) => ids.learn(d, m[i + 1]));
        found = true;
        at++;
        break;
      }
    }
    if (!found) return raw;
  }
  return undefined;
}

/** Writes the doc's files with the ids learnt so far (a config shown before the command that made its ids). */
function writeFiles(ctx: RunContext, ids: IdMap): void {
  for (const [name, template] of ids.files) {
    const path = join(ctx.cwd, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, ctx.rewrite(ids.apply(template)) + "\n");
  }
}

/** A transcript's commands with the output lines the doc shows for each. */
export function parseTranscript(body: string): { command: string; expected: string[] }[] {
  const steps: { command: string; expected: string[] }[] = [];
  for (const line of body.split("\n")) {
    if (line.startsWith("$ ")) steps.push({ command: line.slice(2), expected: [] });
    else if (steps.length > 0) steps[steps.length - 1].expected.push(line);
  }
  return steps;
}

/** Runs one marked example; throws with what went wrong. Files are (re)written by the caller through `writeFile`. */
export async function runExample(e: DocExample, ctx: RunContext, ids: IdMap): Promise<void> {
  const where = `${e.doc}:${e.line}`;
  const body = ctx.rewrite(ids.apply(e.body));
  if (e.kind === "file") {
    ids.files.set(e.arg!, e.body);
    writeFiles(ctx, ids);
    return;
  }
  if (e.lang === "js" || e.lang === "mjs") {
    const file = `example-${e.line}.mjs`;
    writeFileSync(join(ctx.cwd, file), body + "\n");
    const r = await runBash(ctx, `node ${file}`);
    if (r.code !== 0) throw new Error(`${where}: node exited ${r.code}\n${r.output}`);
    return;
  }
  if (e.lang === "python") {
    const file = `example-${e.line}.py`;
    writeFileSync(join(ctx.cwd, file), body + "\n");
    const r = await runBash(ctx, `python3 ${file}`);
    if (r.code !== 0) throw new Error(`${where}: python3 exited ${r.code}\n${r.output}`);
    return;
  }
  if (isTranscript(body)) {
    for (const step of parseTranscript(e.body)) {
      const command = ctx.rewrite(ids.apply(step.command));
      const r = await runBash(ctx, command);
      const wantsError = step.expected.some((l) => l.startsWith("✘ [ERROR]"));
      if (r.code !== (wantsError ? 1 : 0))
        throw new Error(`${where}: \`${command}\` exited ${r.code}, the doc shows ${wantsError ? "an error" : "success"}\n${r.output}`);
      const missing = matchOutput(step.expected.map(ctx.rewrite), r.output, ids);
      writeFiles(ctx, ids);
      if (missing !== undefined) throw new Error(`${where}: \`${command}\` did not print the doc's line\n  ${missing}\nit printed:\n${r.output}`);
    }
    return;
  }
  const r = await runBash(ctx, `set -euo pipefail\n${body}`);
  if (r.code !== 0) throw new Error(`${where}: exited ${r.code}\n${r.output}`);
}
