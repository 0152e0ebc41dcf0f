import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/**
 * Test-only: a TCP proxy on loopback in front of a real server, that a test closes to make the server unreachable
 * (new connections refused, open ones reset, exactly what a client sees of a server that went away) and opens
 * again on the same port, or makes slow to answer for as long as it likes (hold). Lighter than a private server when
 * only "unreachable" or "slow" matters.
 */
export interface TcpProxy {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Stops listening and resets every open connection. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
  /**
   * From now until the hold is released, what the server sends on connections opened meanwhile is kept back (what
   * clients send still goes through): the server has the request and has answered, the client is still waiting.
   */
  hold(): ProxyHold;
  close(): Promise<void>;
}

export interface ProxyHold {
  /** Bytes the server has sent on held connections and that are kept back (more than 0: it has answered). */
  keptBytes(): number;
  /** Sends what was kept back, and lets everything through from now on. */
  release(): void;
}

export async function startTcpProxy(upstream: string): Promise<TcpProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  /** The current hold's connections, each waiting to be let through; undefined when nothing is held. */
  let held: (() => void)[] | undefined;
  let keptBytes = 0;
  /** Passes what `up` sends to `client` once let through; until then keeps it (and whether `up` has ended). */
  const keepBack = (up: Socket, client: Socket, queue: (() => void)[]) => {
    const kept: Buffer[] = [];
    let ended = false;
    const keep = (chunk: Buffer) => {
      kept.push(chunk);
      keptBytes += chunk.length;
    };
    const end = () => (ended = true);
    up.on("data", keep);
    up.once("end", end);
    queue.push(() => {
      up.off("data", keep);
      up.off("end", end);
      for (const chunk of kept) client.write(chunk);
      if (ended) client.end();
      else up.pipe(client);
    });
  };
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const s = createServer((client) => {
        const up = connect(Number(target.port), target.hostname);
        for (const sock of [client, up]) {
          sockets.add(sock);
          sock.on("close", () => sockets.delete(sock));
          sock.on("error", () => (sock === client ? up : client).destroy());
        }
        client.pipe(up);
        if (held) keepBack(up, client, held);
        else up.pipe(client);
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
    hold() {
      const queue: (() => void)[] = [];
      held = queue;
      keptBytes = 0;
      return {
        keptBytes: () => keptBytes,
        release() {
          if (held === queue) held = undefined;
          for (const letThrough of queue.splice(0)) letThrough();
        },
      };
    },
    close: cut,
  };
}
