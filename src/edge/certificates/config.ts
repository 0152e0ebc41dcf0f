import { readFileSync } from "node:fs";
import type { OptionSpec, OptionValues } from "../../core/cli/command.js";
import { UserError } from "../../core/errors.js";

/** The HTTPS edge port's part of `edgecli serve` (merged into the edge's options by edge/commands.ts). */
export const certificateServeOptions = {
  "edge-tls-port": {
    type: "number",
    describe:
      "Serve Custom Domains over HTTPS on this port too, with certificates the platform orders itself (ACME DNS-01 answered by its own DNS); off unless given; needs --acme-directory",
  },
  "edge-tls-handshake-timeout": {
    type: "number",
    describe:
      "Seconds a connection to the HTTPS port has to send its ClientHello and finish the handshake; it counts against --edge-max-connections from accept",
    default: 10,
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

/** The HTTPS edge port and the certificates the platform orders (edge/certificates/): on only with --edge-tls-port. */
export interface EdgeTlsConfig {
  /** The HTTPS port, on the same host as the edge port (0: any free one). */
  port: number;
  /** How long a connection has to finish its TLS handshake (ms). */
  handshakeTimeoutMs: number;
  acme: {
    directoryUrl: string;
    email: string | undefined;
    /** PEM text of the CAs trusted for the ACME server, besides Node's own; undefined: Node's own only. */
    ca: string | undefined;
  };
  /** Certificates one account may have not yet issued (pending or failed): past it, attaching a domain is refused. */
  pendingPerAccount: number;
}

export function readCertificatesConfig(options: OptionValues<typeof certificateServeOptions>): EdgeTlsConfig | undefined {
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
  return {
    port,
    handshakeTimeoutMs: handshakeSeconds(options["edge-tls-handshake-timeout"]) * 1000,
    acme: { directoryUrl: url.href, email, ca },
    pendingPerAccount,
  };
}

function handshakeSeconds(n: number): number {
  if (!Number.isFinite(n) || n < 0.1 || n > 120) throw new UserError(`--edge-tls-handshake-timeout must be a number of seconds from 0.1 to 120; got ${n}`);
  return n;
}
