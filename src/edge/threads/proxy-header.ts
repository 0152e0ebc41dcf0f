import { isIP } from "node:net";

/**
 * The first line of a connection an edge thread hands to the main thread: the client's and the edge port's addresses
 * in the PROXY protocol's text form (version 1, as HAProxy specifies it), so that the main thread sees the client as
 * if it had accepted the connection itself (the loopback rule, per-client limits, logs). Only the main thread's own
 * Unix socket (mode 0600, in a directory only the platform's user reads) is read this way.
 */
export interface ConnectionAddresses {
  remoteAddress: string;
  remotePort: number;
  localAddress: string;
  localPort: number;
}

/** The longest line the protocol allows, CRLF included. */
export const PROXY_LINE_MAX = 107;

export function proxyLine(a: ConnectionAddresses): string {
  const family = isIP(a.remoteAddress) === 6 ? "TCP6" : "TCP4";
  return `PROXY ${family} ${a.remoteAddress} ${a.localAddress} ${a.remotePort} ${a.localPort}\r\n`;
}

const PORT = /^(0|[1-9][0-9]{0,4})$/;

/** The addresses of a PROXY line (without its CRLF), or undefined when it is not one this side writes. */
export function parseProxyLine(line: string): ConnectionAddresses | undefined {
  const parts = line.split(" ");
  if (parts.length !== 6 || parts[0] !== "PROXY") return undefined;
  const [, family, remoteAddress, localAddress, remotePort, localPort] = parts;
  const v = family === "TCP4" ? 4 : family === "TCP6" ? 6 : 0;
  if (v === 0 || isIP(remoteAddress) !== v || isIP(localAddress) !== v) return undefined;
  if (!PORT.test(remotePort) || !PORT.test(localPort) || Number(remotePort) > 65535 || Number(localPort) > 65535) return undefined;
  return { remoteAddress, remotePort: Number(remotePort), localAddress, localPort: Number(localPort) };
}
