import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

/** A request a scripted origin saw. */
export interface OriginHit {
  url: string;
  headers: IncomingMessage["headers"];
}

/**
 * A real origin on a loopback address, port 80, whose answers the test scripts per path (`routes`); what it saw is
 * counted per path. Paths not scripted answer 200 "body of <path>" without caching headers.
 */
export async function startScriptedOrigin(
  t: { after(fn: () => unknown): void },
  address: string,
): Promise<{
  server: Server;
  hits: OriginHit[];
  count(path: string): number;
  route(path: string, handler: (req: IncomingMessage, res: ServerResponse) => void): void;
}> {
  const hits: OriginHit[] = [];
  const routes = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  const server = createServer((req, res) => {
    hits.push({ url: req.url ?? "", headers: req.headers });
    const path = (req.url ?? "/").split("?")[0];
    const handler = routes.get(path);
    if (handler) return handler(req, res);
    res.end(`body of ${req.url}`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(80, address, () => resolve());
  });
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    server,
    hits,
    count: (path) => hits.filter((h) => h.url.split("?")[0] === path).length,
    route: (path, handler) => routes.set(path, handler),
  };
}
