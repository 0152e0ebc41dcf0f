import { randomBytes } from "node:crypto";
import { Client } from "undici";

/**
 * The module workerd runs first for every script: it re-exports the script's main module unchanged (its default
 * export and every named one, so Durable Object and entrypoint classes stay reachable) and adds one named
 * entrypoint that answers which handlers the default export has. The platform asks it once per version, on a
 * socket of its own (`handlers`), and reports the answer as the script's `handlers`.
 *
 * Why ask the running script: the handlers are whatever the default export has when the module has run: an
 * object literal, a class, `new Hono()`, a wrapper such as `withSentry(...)`, or a re-export of another module's
 * default. Reading the source (acorn, es-module-lexer, esbuild's metafile) sees export names, not the properties
 * of the value behind `default`, and would have to guess for every value it cannot trace. The rule is workerd's
 * own (`Worker::Lock::validateHandlers`): the own enumerable keys of an object (and the methods along its
 * prototype chain up to `Object.prototype`), the prototype methods of a class that extends `WorkerEntrypoint`,
 * none for any other class (workerd takes it for a Durable Object), less `constructor` and the names workerd
 * ignores (`alarm`, `unhandledrejection`, `rejectionhandled`). It costs no second isolate and no parse in the
 * platform's event loop; the entrypoint runs only when asked.
 */
export interface EntryModule {
  /** Its module name in the config: fresh per version, so no uploaded module can have it. */
  name: string;
  source: string;
  /** The named export workerd's `handlers` socket serves. */
  handlersExport: string;
  /** The named export workerd's `scheduled` socket serves: it runs the script's `scheduled()` for a cron tick. */
  scheduledExport: string;
}

/**
 * `durableObjectClasses`: the classes the script has Durable Object namespaces for. Each must be a class the main
 * module exports, or the module throws as it loads and workerd refuses the version (workerd itself only warns, and
 * the objects would fail at their first call): a version dropping a class whose objects exist is refused, as the
 * hosted platform refuses it without a deleted_classes migration.
 */
export function entryModule(mainModule: string, durableObjectClasses: readonly string[] = []): EntryModule {
  const tag = randomBytes(8).toString("hex");
  const handlersExport = `__edge_handlers_${tag}`;
  const scheduledExport = `__edge_scheduled_${tag}`;
  // workerd resolves a specifier against the importing module's name: "./<name>" reaches any module name it accepts.
  const main = JSON.stringify(`./${mainModule}`);
  const source = `import * as main from ${main};
import { WorkerEntrypoint } from "cloudflare:workers";
export * from ${main};
// A main module without a default export gets an empty one: workerd refuses \`export default undefined\`.
export default "default" in main ? main.default : {};
for (const c of ${JSON.stringify(durableObjectClasses)}) {
  if (typeof main[c] !== "function") {
    throw new Error(\`The Worker does not export the Durable Object class \${c}, whose objects exist: export it, or delete it with a deleted_classes migration (its objects' storage is then deleted)\`);
  }
}
const IGNORED = new Set(["alarm", "unhandledrejection", "rejectionhandled"]);
function methods(proto, names) {
  for (let p = proto; p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const n of Object.getOwnPropertyNames(p)) if (n !== "constructor" && !IGNORED.has(n)) names.add(n);
  }
}
function handlers() {
  if (!("default" in main)) return [];
  const d = main.default;
  const names = new Set();
  if (typeof d === "function") {
    for (let c = d; c !== null; c = Object.getPrototypeOf(c)) {
      if (c === WorkerEntrypoint) {
        methods(d.prototype, names);
        break;
      }
    }
  } else if (d !== null && typeof d === "object" && !Array.isArray(d)) {
    for (const k of Object.keys(d)) if (!IGNORED.has(k)) names.add(k);
    methods(Object.getPrototypeOf(d), names);
  }
  return [...names];
}
export const ${handlersExport} = {
  fetch() {
    return new Response(JSON.stringify(handlers()), { headers: { "content-type": "application/json" } });
  },
};
// One cron tick: runs the default export's scheduled() with a controller, this isolate's env and a context whose
// waitUntil promises are awaited before answering, so the outcome covers them as the hosted platform's does.
export const ${scheduledExport} = {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    let noRetry = false;
    const controller = {
      type: "scheduled",
      cron: url.searchParams.get("cron") ?? "",
      scheduledTime: Number(url.searchParams.get("time")),
      noRetry() { noRetry = true; },
    };
    const waits = [];
    const context = { waitUntil(p) { waits.push(p); }, passThroughOnException() {}, props: ctx.props };
    try {
      const d = main.default;
      if (typeof d === "function") await new d(context, env).scheduled(controller);
      else await d.scheduled(controller, env, context);
      for (const s of await Promise.allSettled(waits)) if (s.status === "rejected") throw s.reason;
      return Response.json({ outcome: "ok", noRetry });
    } catch (e) {
      console.error("Uncaught exception in scheduled():", e && e.stack ? e.stack : String(e));
      return Response.json({ outcome: "exception", noRetry });
    }
  },
};
`;
  return { name: `__edge_entry_${tag}.js`, source, handlersExport, scheduledExport };
}

/** What one scheduled() run came to: "ok", or "exception" when it (or a promise given to waitUntil) threw. */
export interface ScheduledOutcome {
  outcome: "ok" | "exception";
  noRetry: boolean;
}

/** How long a scheduled() run may take before the platform stops waiting for it (the hosted limit for a cron tick of 15 minutes). */
const SCHEDULED_TIMEOUT_MS = 15 * 60_000;

/** Runs the script's scheduled() for the tick `scheduledTime` of `cron`, through the entry module's `scheduled` socket. */
export async function runScheduledOn(socketPath: string, cron: string, scheduledTime: number, timeoutMs = SCHEDULED_TIMEOUT_MS): Promise<ScheduledOutcome> {
  const client = new Client("http://workerd", { socketPath, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  try {
    const query = new URLSearchParams({ cron, time: String(scheduledTime) });
    const res = await client.request({ method: "POST", path: `/?${query}`, signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`the scheduled entrypoint answered ${res.statusCode}`);
    const answer = JSON.parse(text) as Partial<ScheduledOutcome>;
    return { outcome: answer.outcome === "ok" ? "ok" : "exception", noRetry: answer.noRetry === true };
  } finally {
    await client.destroy();
  }
}

/** Bounds on the answer: the script's own code runs there and could say anything. */
const HANDLERS_MAX_BYTES = 64 * 1024;
const HANDLER_NAME_MAX = 256;
const HANDLERS_MAX = 256;

/**
 * Asks the entry module on its `handlers` socket which handlers the script's default export has. Rejects when the
 * answer does not come in time or is not a list of names.
 */
export async function askHandlers(socketPath: string, timeoutMs = 10_000): Promise<string[]> {
  const client = new Client("http://workerd", { socketPath, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  try {
    const res = await client.request({ method: "GET", path: "/", signal: AbortSignal.timeout(timeoutMs) });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > HANDLERS_MAX_BYTES) throw new Error(`the handlers answer is larger than ${HANDLERS_MAX_BYTES} bytes`);
      chunks.push(chunk);
    }
    if (res.statusCode !== 200) throw new Error(`the handlers entrypoint answered ${res.statusCode}`);
    const names: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    if (
      !Array.isArray(names) ||
      names.length > HANDLERS_MAX ||
      !names.every((n): n is string => typeof n === "string" && n.length > 0 && n.length <= HANDLER_NAME_MAX)
    ) {
      throw new Error("the handlers answer is not a list of names");
    }
    return names;
  } finally {
    await client.destroy();
  }
}
