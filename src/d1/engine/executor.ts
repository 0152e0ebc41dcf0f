import { fork, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { EdgeError } from "../../core/errors.js";
import type { Logger } from "../../core/logger.js";
import { D1Errors } from "../errors.js";
import type { ExecutorAnswer, ExecutorJob } from "./protocol.js";

/** The executor's entry, beside this module (compiled: dist/d1/engine/; bundled: dist/bin/, see scripts/bundle-cli.mjs). */
const EXECUTOR_SCRIPT = fileURLToPath(new URL("./d1-executor.js", import.meta.url));

/** How long a new executor may take to start (a hang guard: on a loaded machine it takes a few hundred ms). */
const START_TIMEOUT_MS = 60_000;

/** Node's own heap of an executor: it holds one request's results at a time (within the process's memory cap). */
const EXECUTOR_HEAP_MB = 256;

/**
 * Address space the runtime reserves at start and RLIMIT_DATA counts, added to the cap so that the cap stays about
 * what SQLite and the results may use. Node 24's V8 reserves its code range up front: 24.22.3 does not start under
 * a data limit of 560 MB ("Failed to reserve virtual memory for CodeRange") and starts under 600 MB; Node 20 and 22
 * start under 512 MB.
 */
const RUNTIME_RESERVATION_BYTES = Number(process.versions.node.split(".")[0]) >= 24 ? 640 * 1024 * 1024 : 0;

/**
 * util-linux's prlimit, which starts the executor with its data segment capped (RLIMIT_DATA): Node cannot set a
 * resource limit on a child, and SQLite's own heap limit is off in better-sqlite3's build (d1-executor.ts). Absent
 * (not Linux, a minimal image), executors run uncapped and the platform says so once.
 */
const PRLIMIT = [
  "/usr/bin/prlimit",
  "/bin/prlimit",
  ...(process.env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .map((d) => join(d, "prlimit")),
].find((p) => p.startsWith("/") && existsSync(p));
let warnedUncapped = false;

/**
 * One database's executor process, seen from the platform: jobs run one at a time, in order (a D1 database is
 * single-threaded, as the hosted one is), each with a deadline. A job past its deadline gets the process killed
 * (SIGKILL: SQLite never returns to JavaScript during a statement, so nothing gentler reaches it) and fails with
 * D1Errors.timeout; the next job starts a new process, which finds the file as the last committed transaction left it.
 */
export class DatabaseExecutor {
  private child?: Promise<ChildProcess>;
  private tail: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private pending = 0;
  lastUsed = Date.now();

  constructor(
    readonly file: string,
    /** The account whose database this is: what the engine's per-account cap counts. */
    readonly accountId: string,
    private readonly timeoutMs: number,
    /** Bytes the process may allocate (its RLIMIT_DATA). */
    private readonly memoryBytes: number,
    private readonly log: Logger,
  ) {}

  /** Whether a job is running or waiting. */
  get busy(): boolean {
    return this.pending > 0;
  }

  /** Runs `job` after those before it; `timeoutMs` overrides the deadline (imports get longer). */
  run(job: ExecutorJob, timeoutMs = this.timeoutMs): Promise<ExecutorAnswer & { ok: true }> {
    this.pending++;
    const result = this.tail.then(() => this.runNow(job, timeoutMs));
    this.tail = result.catch(() => undefined);
    return result.finally(() => {
      this.pending--;
      this.lastUsed = Date.now();
    });
  }

  /** A new executor process, once it has opened the database and said so. */
  private spawn(): Promise<ChildProcess> {
    if (!existsSync(EXECUTOR_SCRIPT)) return Promise.reject(new Error(`D1 executor script missing: ${EXECUTOR_SCRIPT}`));
    if (!PRLIMIT && !warnedUncapped) {
      warnedUncapped = true;
      this.log.warn("prlimit (util-linux) not found: D1 executors run without a memory cap (--d1-executor-memory is not applied)");
    }
    const heap = `--max-old-space-size=${EXECUTOR_HEAP_MB}`;
    const child = fork(EXECUTOR_SCRIPT, [this.file], {
      // fork runs `<execPath> <execArgv> <script>`: through prlimit, which execs Node in place with the limit set.
      ...(PRLIMIT ? { execPath: PRLIMIT, execArgv: [`--data=${this.memoryBytes + RUNTIME_RESERVATION_BYTES}`, process.execPath, heap] } : { execArgv: [heap] }),
      // Advanced serialization carries Buffers and large results without a JSON round trip of its own.
      serialization: "advanced",
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      env: {},
    });
    child.stderr?.on("data", (d: Buffer) => this.log.warn({ file: this.file, stderr: d.toString("utf8").slice(0, 2000) }, "d1 executor wrote to stderr"));
    const started = new Promise<ChildProcess>((resolve, reject) => {
      const fail = (why: string) => {
        clearTimeout(guard);
        child.kill("SIGKILL");
        reject(new Error(`the D1 executor for ${this.file} did not start: ${why}`));
      };
      const guard = setTimeout(() => fail(`no answer in ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS);
      const exited = (code: number | null, signal: NodeJS.Signals | null) => fail(`exited (${code ?? signal})`);
      child.once("exit", exited);
      child.once("message", () => {
        clearTimeout(guard);
        child.off("exit", exited);
        resolve(child);
      });
    });
    child.on("exit", () => {
      if (this.child === started) this.child = undefined;
    });
    this.child = started;
    started.catch(() => {
      if (this.child === started) this.child = undefined;
    });
    return started;
  }

  private async runNow(job: ExecutorJob, timeoutMs: number): Promise<ExecutorAnswer & { ok: true }> {
    const child = await (this.child ?? this.spawn());
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        child.off("message", onMessage);
        child.off("exit", onExit);
      };
      const onMessage = (msg: { id: number; reply: ExecutorAnswer }) => {
        if (msg.id !== id) return;
        done();
        const r = msg.reply;
        if (r.ok) resolve(r);
        else if (r.kind === "sql") reject(D1Errors.sql(r.message));
        else if (r.kind === "tooLarge") reject(D1Errors.resultTooLarge());
        else if (r.kind === "refusal") reject(new EdgeError(r.status, r.code, r.message));
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        done();
        this.log.warn({ file: this.file, code, signal }, "d1 executor exited during a query");
        reject(D1Errors.executorDied());
      };
      timer = setTimeout(() => {
        done();
        this.log.warn({ file: this.file, timeoutMs }, "d1 query exceeded its time limit; killing its executor");
        this.kill();
        reject(D1Errors.timeout(timeoutMs));
      }, timeoutMs);
      child.on("message", onMessage);
      child.on("exit", onExit);
      child.send({ id, job }, (err) => {
        if (!err) return;
        done();
        reject(err);
      });
    });
  }

  private kill(): void {
    const child = this.child;
    this.child = undefined;
    void child?.then((c) => c.kill("SIGKILL")).catch(() => undefined);
  }

  /** Stops the process after the jobs already given (an idle close, a delete, the platform stopping). */
  async close(): Promise<void> {
    await this.tail;
    const starting = this.child;
    this.child = undefined;
    const child = await starting?.catch(() => undefined);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.disconnect();
    const hard = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(hard);
  }
}
