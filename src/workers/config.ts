import type { OptionSpec, OptionValues } from "../core/cli/command.js";
import { UserError } from "../core/errors.js";
import { defaultWorkerdPath } from "./runtime/workerd-binary.js";

/** What Workers adds to `edgecli serve` (defaults live only here). */
export const serveOptions = {
  "workers-domain": {
    type: "string",
    describe: "Worker scripts are served on the edge port at <script>.<this domain>",
    default: "workers.localhost",
  },
  "workerd-binary": {
    type: "string",
    describe: "The workerd executable that runs worker scripts (default: the one of the pinned npm package workerd)",
  },
  "worker-answer-timeout": {
    type: "number",
    describe:
      "Seconds a Worker may take to start its answer (status and headers; the client gets a 504), and then to send the next part of it (the answer is cut); 0: no limit while the client waits, as on the hosted platform",
    default: 300,
  },
  "websockets-max": {
    type: "number",
    describe: "WebSocket connections to Workers the edge carries at once, across accounts (each holds two sockets)",
    default: 10_000,
  },
  "websockets-per-account-max": {
    type: "number",
    describe: "WebSocket connections to one account's Workers at once, so that one account cannot take every connection",
    default: 2_500,
  },
  "workers-logs-retention-days": {
    type: "number",
    describe: "Days the invocation logs of Workers with [observability] enabled are kept (Workers Logs)",
    default: 7,
  },
  "workers-logs-max-rows": {
    type: "number",
    describe: "Workers Logs events one account may keep; past it, its oldest go first",
    default: 500_000,
  },
  "workers-logs-max-mb": {
    type: "number",
    describe: "MiB of Workers Logs events one account may keep; past it, its oldest go first",
    default: 256,
  },
} satisfies Record<string, OptionSpec>;

export interface WorkersConfig {
  /** The domain scripts are served under, lower case, without leading or trailing dots. */
  domain: string;
  /** The workerd executable that runs every script. */
  workerdPath: string;
  /** Milliseconds a Worker may take to start its answer, and between parts of it; 0: no limit. */
  answerTimeoutMs: number;
  /** WebSocket connections carried at once, in all and per account (websocket-proxy.ts). */
  webSockets: { max: number; perAccountMax: number };
  /** Workers Logs: how long events are kept, and what one account may keep. */
  logs: { retentionMs: number; cap: { rows: number; bytes: number } };
}

export function readWorkersConfig(options: OptionValues<typeof serveOptions>): WorkersConfig {
  return {
    domain: options["workers-domain"].toLowerCase().replace(/^\.+|\.+$/g, ""),
    // Not a default of the option: the pinned package's binary is found where npm installed it.
    workerdPath: options["workerd-binary"] ?? defaultWorkerdPath(),
    answerTimeoutMs: secondsOrNone("--worker-answer-timeout", options["worker-answer-timeout"]) * 1000,
    webSockets: {
      max: count("--websockets-max", options["websockets-max"]),
      perAccountMax: count("--websockets-per-account-max", options["websockets-per-account-max"]),
    },
    logs: {
      retentionMs: days("--workers-logs-retention-days", options["workers-logs-retention-days"]) * 86_400_000,
      cap: {
        rows: whole("--workers-logs-max-rows", options["workers-logs-max-rows"], 1_000_000_000),
        bytes: whole("--workers-logs-max-mb", options["workers-logs-max-mb"], 1_000_000) * 1024 * 1024,
      },
    },
  };
}

function secondsOrNone(flag: string, n: number): number {
  if (!Number.isFinite(n) || n < 0 || n > 86_400) throw new UserError(`${flag} must be a number of seconds from 0 (no limit) to 86400; got ${n}`);
  return n;
}

function count(flag: string, n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new UserError(`${flag} must be a whole number from 1 to 1000000; got ${n}`);
  return n;
}

function days(flag: string, n: number): number {
  if (!Number.isFinite(n) || n <= 0 || n > 366) throw new UserError(`${flag} must be a number of days above 0, at most 366; got ${n}`);
  return n;
}

function whole(flag: string, n: number, max: number): number {
  if (!Number.isInteger(n) || n < 1 || n > max) throw new UserError(`${flag} must be a whole number from 1 to ${max}; got ${n}`);
  return n;
}
