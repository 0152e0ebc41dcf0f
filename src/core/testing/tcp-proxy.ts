import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/**
 * Test-only: a TCP proxy on loopback in front of a real server, that a test closes to make the server unreachable
 * (new connections refused, open ones reset, exactly what a client sees of a server that went away) and opens
 * again on the same port. Lighter than a private server when only "unreachable" matters.
 */
export interface TcpProxy {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Stops listening and resets every open connection. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(upstream: string): Promise<TcpProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const s = createServer((client) => {
        const up = connect(Number(target.port), target.hostname);
        for (const sock of [client, up]) {
          sockets.add(sock);
          sock.on("close", () => sockets.delete(sock));
          sock.on("error", () => (sock === client ? up : client).destroy());
        }
        client.pipe(up).pipe(client);
      });
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => {
        server = s;
        resolve((s.address() as AddressInfo).port);
      });
    });
  const port = await listen(0);
  const cut = async () => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.resetAndDestroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    cut,
    restore: async () => void (server ? undefined : await listen(port)),
    close: cut,
  };
}
