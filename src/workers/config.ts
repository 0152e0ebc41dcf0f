import type { OptionSpec, OptionValues } from "../core/cli/command.js";
import { readFileSync } from "node:fs";
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
  "edge-tls-port": {
    type: "number",
    describe:
      "Serve Custom Domains over HTTPS on this port too, with certificates the platform orders itself (ACME DNS-01 answered by its own DNS); off unless given; needs --acme-directory",
  },
  "acme-directory": {
    type: "string",
    describe: "The directory URL of the ACME CA that issues Custom Domain certificates (e.g. https://acme-v02.api.letsencrypt.org/directory)",
  },
  "acme-email": {
    type: "string",
    describe: "The contact email of the platform's ACME account (the CA's expiry and policy notices go there)",
  },
  "acme-ca-file": {
    type: "string",
    describe: "A PEM file of CA certificates to trust for the ACME server itself, besides the system's (a private CA, or pebble in tests)",
  },
  "acme-pending-per-account": {
    type: "number",
    describe:
      "Custom Domain certificates one account may have waiting to be issued (pending or failed); attaching a domain past it is refused with 429 until some are issued or detached",
    default: 50,
  },
} satisfies Record<string, OptionSpec>;

/** Certificates for Custom Domains (certificates/): on only with --edge-tls-port. */
export interface EdgeTlsConfig {
  /** The HTTPS port, on the same host as the edge port (0: any free one). */
  port: number;
  acme: {
    directoryUrl: string;
    email: string | undefined;
    /** PEM text of the CAs trusted for the ACME server, besides Node's own; undefined: Node's own only. */
    ca: string | undefined;
  };
  /** Certificates one account may have not yet issued (pending or failed): past it, attaching a domain is refused. */
  pendingPerAccount: number;
}

export interface WorkersConfig {
  /** The domain scripts are served under, lower case, without leading or trailing dots. */
  domain: string;
  /** The workerd executable that runs every script. */
  workerdPath: string;
  /** Milliseconds a Worker may take to start its answer, and between parts of it; 0: no limit. */
  answerTimeoutMs: number;
  /** WebSocket connections carried at once, in all and per account (websocket-proxy.ts). */
  webSockets: { max: number; perAccountMax: number };
  /** undefined unless --edge-tls-port is given: then nothing of certificates/ runs. */
  tls: EdgeTlsConfig | undefined;
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
    tls: readTlsConfig(options),
  };
}

function readTlsConfig(options: OptionValues<typeof serveOptions>): EdgeTlsConfig | undefined {
  const port = options["edge-tls-port"];
  const directoryUrl = options["acme-directory"];
  if (port === undefined) {
    if (directoryUrl !== undefined || options["acme-ca-file"] !== undefined || options["acme-email"] !== undefined)
      throw new UserError("--acme-directory, --acme-email and --acme-ca-file take effect only with --edge-tls-port");
    return undefined;
  }
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UserError(`--edge-tls-port must be a port number from 0 to 65535; got ${port}`);
  if (directoryUrl === undefined) throw new UserError("--edge-tls-port needs --acme-directory: the ACME CA the platform orders certificates from");
  let url: URL;
  try {
    url = new URL(directoryUrl);
  } catch {
    throw new UserError(`--acme-directory must be a URL; got ${directoryUrl}`);
  }
  // RFC 8555 section 6.1: ACME is spoken over HTTPS only.
  if (url.protocol !== "https:") throw new UserError(`--acme-directory must be an https:// URL (RFC 8555); got ${directoryUrl}`);
  const email = options["acme-email"];
  if (email !== undefined && !/^[^@\s]+@[^@\s]+$/.test(email)) throw new UserError(`--acme-email must be an email address; got ${email}`);
  const caFile = options["acme-ca-file"];
  let ca: string | undefined;
  if (caFile !== undefined) {
    try {
      ca = readFileSync(caFile, "utf8");
    } catch (err) {
      throw new UserError(`--acme-ca-file ${caFile} cannot be read: ${(err as Error).message}`);
    }
    if (!ca.includes("-----BEGIN CERTIFICATE-----")) throw new UserError(`--acme-ca-file ${caFile} holds no PEM certificate`);
  }
  const pendingPerAccount = options["acme-pending-per-account"];
  if (!Number.isInteger(pendingPerAccount) || pendingPerAccount < 1)
    throw new UserError(`--acme-pending-per-account must be a whole number of at least 1; got ${pendingPerAccount}`);
  return { port, acme: { directoryUrl: url.href, email, ca }, pendingPerAccount };
}

function secondsOrNone(flag: string, n: number): number {
  if (!Number.isFinite(n) || n < 0 || n > 86_400) throw new UserError(`${flag} must be a number of seconds from 0 (no limit) to 86400; got ${n}`);
  return n;
}

function count(flag: string, n: number): number {
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new UserError(`${flag} must be a whole number from 1 to 1000000; got ${n}`);
  return n;
}
