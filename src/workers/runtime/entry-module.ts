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
}

export function entryModule(mainModule: string): EntryModule {
  const tag = randomBytes(8).toString("hex");
  const handlersExport = `__edge_handlers_${tag}`;
  // workerd resolves a specifier against the importing module's name: "./<name>" reaches any module name it accepts.
  const main = JSON.stringify(`./${mainModule}`);
  const source = `import * as main from ${main};
import { WorkerEntrypoint } from "cloudflare:workers";
export * from ${main};
// A main module without a default export gets an empty one: workerd refuses \`export default undefined\`.
export default "default" in main ? main.default : {};
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
`;
  return { name: `__edge_entry_${tag}.js`, source, handlersExport };
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
