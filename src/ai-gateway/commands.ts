import { defineCommand, type AnyCommand, type CommandAlias, type OptionSpec } from "../core/cli/command.js";
import { lazy } from "../core/cli/lazy.js";

export { serveOptions } from "./config.js";

/** What each of this area's command groups is for, shown by `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  "ai-gateway": "Manage AI gateways, their tokens and their logs",
  "ai-gateway token": "Create, list and revoke gateway tokens (API tokens with the AI Gateway Run permission)",
  "ai-gateway key": "Store, list, rotate and delete a gateway's provider keys (BYOK); a stored key is never shown again",
};

/** Deprecated spellings of this area's command groups. */
export const aliases: CommandAlias[] = [];

/** Gateway settings as CLI options; each maps to one field of the gateway object. */
const SETTING_OPTIONS = {
  "cache-ttl": { type: "number", describe: "Seconds a cached answer is served (0 turns caching off)" },
  "cache-invalidate-on-update": { type: "boolean", describe: "Drop cached answers when the gateway is updated" },
  "collect-logs": { type: "boolean", describe: "Keep a log of every request (--no-collect-logs to turn off)" },
  authentication: { type: "boolean", describe: "Require a gateway token (gw-aig-authorization) on every request" },
  "rate-limit": { type: "number", describe: "Requests allowed per interval (0 turns rate limiting off)" },
  "rate-limit-interval": { type: "number", describe: "Rate limit interval in seconds" },
  "rate-limit-technique": { type: "string", choices: ["fixed", "sliding"], describe: "Rate limit window" },
  "log-limit": { type: "number", describe: "Most logs kept (10000-10000000)" },
  "log-strategy": { type: "string", choices: ["STOP_INSERTING", "DELETE_OLDEST"], describe: "What happens at the log limit" },
  "retry-max-attempts": { type: "number", describe: "Attempts per request (1-5)" },
  "retry-delay": { type: "number", describe: "Milliseconds between attempts" },
  "retry-backoff": { type: "string", choices: ["constant", "linear", "exponential"], describe: "How the delay grows" },
} satisfies Record<string, OptionSpec>;

const json = { json: { type: "boolean", describe: "Print JSON" } } satisfies Record<string, OptionSpec>;
/** This area's CLI commands (declared as data; each handler module loads when its command runs). */
export const commands: AnyCommand[] = [
  defineCommand({
    path: ["ai-gateway", "create"],
    describe: "Create an AI gateway",
    positionals: [{ name: "id", describe: "Gateway id (lowercase letters, digits, _ and -)", required: true }],
    options: { ...SETTING_OPTIONS, ...json },
    examples: [
      "edgecli ai-gateway create my-gateway",
      "edgecli ai-gateway create my-gateway --authentication --cache-ttl 300 --rate-limit 100 --rate-limit-interval 60",
    ],
    handler: lazy(() => import("./cli/gateway.js"), "createGateway"),
  }),
  defineCommand({
    path: ["ai-gateway", "list"],
    describe: "List the account's AI gateways",
    options: { search: { type: "string", describe: "Only ids containing this text" }, ...json },
    handler: lazy(() => import("./cli/gateway.js"), "listGateways"),
  }),
  defineCommand({
    path: ["ai-gateway", "get"],
    describe: "Show one AI gateway and its settings (JSON)",
    positionals: [{ name: "id", describe: "Gateway id", required: true }],
    handler: lazy(() => import("./cli/gateway.js"), "getGateway"),
  }),
  defineCommand({
    path: ["ai-gateway", "update"],
    describe: "Change settings of an AI gateway (settings not given stay as they are)",
    positionals: [{ name: "id", describe: "Gateway id", required: true }],
    options: { ...SETTING_OPTIONS, ...json },
    examples: ["edgecli ai-gateway update my-gateway --authentication", "edgecli ai-gateway update my-gateway --no-collect-logs"],
    handler: lazy(() => import("./cli/gateway.js"), "updateGateway"),
  }),
  defineCommand({
    path: ["ai-gateway", "delete"],
    describe: "Delete an AI gateway and its logs (asks first)",
    positionals: [{ name: "id", describe: "Gateway id", required: true }],
    options: { "skip-confirmation": { type: "boolean", alias: "y", describe: "Do not ask (needed without a terminal)" } },
    examples: ["edgecli ai-gateway delete my-gateway", "edgecli ai-gateway delete my-gateway -y"],
    handler: lazy(() => import("./cli/gateway.js"), "deleteGateway"),
  }),
  defineCommand({
    path: ["ai-gateway", "logs"],
    describe: "Show a gateway's most recent request logs",
    positionals: [{ name: "gateway", describe: "Gateway id", required: true }],
    options: {
      limit: { type: "number", describe: "How many logs (1-50)", default: 20 },
      failed: { type: "boolean", describe: "Only requests that did not succeed" },
      ...json,
    },
    examples: ["edgecli ai-gateway logs my-gateway", "edgecli ai-gateway logs my-gateway --failed --json"],
    handler: lazy(() => import("./cli/gateway.js"), "showLogs"),
  }),
  defineCommand({
    path: ["ai-gateway", "token", "create"],
    describe: "Create a gateway token (an API token with the AI Gateway Run permission); its value is shown once",
    positionals: [{ name: "gateway", describe: "Gateway the token is for (used in its name)", required: true }],
    options: { name: { type: "string", describe: "Token name (default ai-gateway-<gateway>)" }, ...json },
    examples: ["edgecli ai-gateway token create my-gateway", "edgecli ai-gateway token create my-gateway --json"],
    handler: lazy(() => import("./cli/token.js"), "createToken"),
  }),
  defineCommand({
    path: ["ai-gateway", "token", "list"],
    describe: "List tokens that carry the AI Gateway Run permission (values are never shown again)",
    options: { ...json },
    handler: lazy(() => import("./cli/token.js"), "listTokens"),
  }),
  defineCommand({
    path: ["ai-gateway", "token", "revoke"],
    describe: "Revoke a gateway token",
    positionals: [{ name: "id", describe: "Token id", required: true }],
    handler: lazy(() => import("./cli/token.js"), "revokeToken"),
  }),
  defineCommand({
    path: ["ai-gateway", "key", "add"],
    describe: "Store a provider key on a gateway, read from a hidden prompt or stdin (never shown again)",
    positionals: [
      { name: "gateway", describe: "Gateway id", required: true },
      { name: "provider", describe: "Provider, as in the gateway's paths (openai, anthropic, ...)", required: true },
    ],
    options: {
      alias: { type: "string", describe: "Name of this key among the provider's keys (letters, digits, _ and -)", default: "default" },
      default: { type: "boolean", describe: "Use it for requests that name no alias (gw-aig-byok-alias)" },
      ...json,
    },
    examples: [
      'printf %s "$OPENAI_API_KEY" | edgecli ai-gateway key add my-gateway openai --default',
      "edgecli ai-gateway key add my-gateway anthropic --alias team-b",
    ],
    handler: lazy(() => import("./cli/key.js"), "addKey"),
  }),
  defineCommand({
    path: ["ai-gateway", "key", "list"],
    describe: "List a gateway's stored provider keys (their values are never shown)",
    positionals: [{ name: "gateway", describe: "Gateway id", required: true }],
    options: { ...json },
    handler: lazy(() => import("./cli/key.js"), "listKeys"),
  }),
  defineCommand({
    path: ["ai-gateway", "key", "rotate"],
    describe: "Replace a stored provider key's value, read from a hidden prompt or stdin",
    positionals: [
      { name: "gateway", describe: "Gateway id", required: true },
      { name: "id", describe: "Key id (from key list)", required: true },
    ],
    options: { ...json },
    handler: lazy(() => import("./cli/key.js"), "rotateKey"),
  }),
  defineCommand({
    path: ["ai-gateway", "key", "delete"],
    describe: "Delete a stored provider key",
    positionals: [
      { name: "gateway", describe: "Gateway id", required: true },
      { name: "id", describe: "Key id (from key list)", required: true },
    ],
    handler: lazy(() => import("./cli/key.js"), "deleteKey"),
  }),
];
