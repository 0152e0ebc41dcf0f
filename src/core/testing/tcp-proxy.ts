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
  /**
   * From now on, what the server sends on every connection, open or new, reaches the client `ms` later, in order (a
   * server far away, or a node whose notices come late). Not for held connections.
   */
  lag(ms: number): void;
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
  let lagMs = 0;
  /** Open connections whose server side is piped to the client as it comes: server side, then client side. */
  const piped = new Map<Socket, Socket>();
  /** Passes what `up` sends to `client` lagMs later, in order. */
  const lagBehind = (up: Socket, client: Socket) => {
    const due: { at: number; chunk: Buffer }[] = [];
    let timer: NodeJS.Timeout | undefined;
    let ended = false;
    const flush = () => {
      timer = undefined;
      const now = Date.now();
      while (due.length > 0 && due[0]!.at <= now) client.write(due.shift()!.chunk);
      if (due.length > 0) timer = setTimeout(flush, due[0]!.at - now);
      else if (ended) client.end();
    };
    up.on("data", (chunk: Buffer) => {
      due.push({ at: Date.now() + lagMs, chunk });
      timer ??= setTimeout(flush, lagMs);
    });
    up.once("end", () => {
      ended = true;
      if (due.length === 0 && timer === undefined) client.end();
    });
    // A socket taken off its pipe was paused by unpipe: a data listener alone does not start it again.
    up.resume();
  };
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
        else if (lagMs > 0) lagBehind(up, client);
        else {
          up.pipe(client);
          piped.set(up, client);
          up.once("close", () => piped.delete(up));
        }
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
    lag(ms: number) {
      lagMs = ms;
      for (const [up, client] of piped) {
        up.unpipe(client);
        lagBehind(up, client);
      }
      piped.clear();
    },
    close: cut,
  };
}
