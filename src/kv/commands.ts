import { defineCommand, type AnyCommand, type CommandAlias, type OptionSpec } from "../core/cli/command.js";
import { lazy } from "../core/cli/lazy.js";

export { serveOptions } from "./config.js";

// Command specs are plain data; every handler's module loads when its command runs, so `edgecli` starts fast
// (the --local path never loads fastify, undici or zod).

const envOption = { type: "string", describe: "Environment to use: bindings come from [env.<name>] of the config file" } as const;
const previewOption = { type: "boolean", describe: "Use the binding's preview namespace (preview_id) instead of id" } as const;

const selectorOptions = {
  binding: { type: "string", describe: "The binding name of the namespace, from kv_namespaces in the config file" },
  "namespace-id": { type: "string", describe: "The id of the namespace" },
  env: envOption,
  preview: previewOption,
} as const satisfies Record<string, OptionSpec>;

const localOptions = {
  local: { type: "boolean", describe: "Work on the local state directory directly, without a running server" },
  "persist-to": { type: "string", describe: "State directory for --local (default: $EDGE_STATE_DIR, else .edge, as `edgecli serve` uses)" },
} as const satisfies Record<string, OptionSpec>;

const keyPositional = { name: "key", describe: "The key, 1-512 bytes of UTF-8", required: true } as const;

/** What each of this area's command groups is for, shown by `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  kv: "Manage KV namespaces and their keys, remotely or on the local state (--local)",
  "kv namespace": "Create, list and delete KV namespaces",
  "kv key": "Put, get, list and delete single keys",
  "kv bulk": "Put or delete many keys from a JSON file, all or nothing",
};

export const commands: AnyCommand[] = [
  defineCommand({
    path: ["kv", "namespace", "create"],
    describe: "Create a KV namespace",
    positionals: [{ name: "namespace", describe: "The name of the new namespace (also its binding name)", required: true }] as const,
    options: { env: envOption, preview: { type: "boolean", describe: "Create a preview namespace (title ends in _preview; snippet uses preview_id)" } },
    examples: ["edgecli kv namespace create MY_KV", "edgecli kv namespace create MY_KV --env staging --preview"],
    epilogue:
      'The title is "<name>-<NAMESPACE>" (<name> from the config file, "worker" without one), "<name>-<env>-<NAMESPACE>" with --env, plus "_preview" with --preview.',
    handler: lazy(() => import("./cli/namespace.js"), "createNamespace"),
  }),
  defineCommand({
    path: ["kv", "namespace", "list"],
    describe: "List every KV namespace of the account as JSON",
    examples: ["edgecli kv namespace list"],
    handler: lazy(() => import("./cli/namespace.js"), "listNamespaces"),
  }),
  defineCommand({
    path: ["kv", "namespace", "delete"],
    describe: "Delete a KV namespace and everything in it (asks first; without a terminal, refuses unless -y)",
    options: { ...selectorOptions, "skip-confirmation": { type: "boolean", alias: "y", describe: "Do not ask (needed without a terminal)" } },
    examples: ["edgecli kv namespace delete --binding MY_KV", "edgecli kv namespace delete --namespace-id 0f2ac74b498b48028cb68387c421e279 -y"],
    handler: lazy(() => import("./cli/namespace.js"), "deleteNamespace"),
  }),
  defineCommand({
    path: ["kv", "key", "put"],
    describe: "Write a single key/value pair to a namespace",
    positionals: [keyPositional, { name: "value", describe: "The value to write (or use --path)" }] as const,
    options: {
      ...selectorOptions,
      path: { type: "string", describe: "Read the value from this file instead of VALUE (binary safe; keeps values out of shell history)" },
      ttl: { type: "number", describe: "Time to live in seconds, at least 60; wins over --expiration" },
      expiration: { type: "number", describe: "Expiration time in UNIX seconds, at least 60 s from now" },
      metadata: { type: "string", describe: "A JSON object stored with the key, at most 1024 bytes serialized" },
      ...localOptions,
    },
    examples: [
      "edgecli kv key put greeting hello --binding MY_KV",
      "edgecli kv key put logo.png --path ./logo.png --namespace-id <id> --ttl 3600",
      `edgecli kv key put user:1 '{"n":1}' --binding MY_KV --metadata '{"v":2}' --local`,
    ],
    handler: lazy(() => import("./cli/key.js"), "putKey"),
  }),
  defineCommand({
    path: ["kv", "key", "list"],
    describe: "List the keys of a namespace as JSON (every page)",
    options: { ...selectorOptions, prefix: { type: "string", describe: "Only keys that start with this prefix" }, ...localOptions },
    examples: ["edgecli kv key list --binding MY_KV --prefix user:"],
    handler: lazy(() => import("./cli/key.js"), "listKeys"),
  }),
  defineCommand({
    path: ["kv", "key", "get"],
    describe: "Write a key's value to stdout, byte for byte",
    positionals: [keyPositional] as const,
    options: { ...selectorOptions, text: { type: "boolean", describe: "Decode the value as UTF-8 text and end it with a newline" }, ...localOptions },
    examples: ["edgecli kv key get greeting --binding MY_KV --text", "edgecli kv key get logo.png --namespace-id <id> > logo.png"],
    handler: lazy(() => import("./cli/key.js"), "getKey"),
  }),
  defineCommand({
    path: ["kv", "key", "delete"],
    describe: "Delete a key from a namespace",
    positionals: [keyPositional] as const,
    options: { ...selectorOptions, ...localOptions },
    examples: ["edgecli kv key delete greeting --binding MY_KV"],
    handler: lazy(() => import("./cli/key.js"), "deleteKey"),
  }),
  defineCommand({
    path: ["kv", "bulk", "put"],
    describe: "Write many key/value pairs from a JSON file; every entry is checked before any is written",
    positionals: [
      { name: "filename", describe: "JSON file holding an array of {key, value, expiration?, expiration_ttl?, metadata?, base64?}", required: true },
    ] as const,
    options: { ...selectorOptions, ...localOptions },
    examples: ["edgecli kv bulk put data.json --binding MY_KV", "edgecli kv bulk put data.json --namespace-id <id> --local"],
    handler: lazy(() => import("./cli/bulk.js"), "bulkPut"),
  }),
  defineCommand({
    path: ["kv", "bulk", "delete"],
    describe: "Delete the keys listed in a JSON file (asks first)",
    positionals: [{ name: "filename", describe: 'JSON file holding an array of key strings (or {"name": key} objects)', required: true }] as const,
    options: { ...selectorOptions, ...localOptions, force: { type: "boolean", alias: "f", describe: "Do not ask for confirmation" } },
    examples: ["edgecli kv bulk delete old-keys.json --binding MY_KV"],
    handler: lazy(() => import("./cli/bulk.js"), "bulkDelete"),
  }),
];

const deprecated = (group: string): CommandAlias => ({
  from: `kv:${group}`,
  to: ["kv", group],
  warning: `The \`edgecli kv:${group}\` command is deprecated and will be removed in a future major version. Please use \`edgecli kv ${group}\` instead which behaves the same.`,
});

/** The pre-3.60 spellings, kept working with a notice naming the new form. */
export const aliases: CommandAlias[] = [deprecated("namespace"), deprecated("key"), deprecated("bulk")];
