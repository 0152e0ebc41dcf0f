import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

/** What a test origin saw of one request. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  rawHeaders: string[];
  bodyBytes: number;
}

/**
 * A real origin on a loopback address (port 80 or 443; the tests run as root), answering as its path says:
 * `/echo` what it saw as JSON, `/bytes/<n>` n bytes, `/never` never, `/hangup` by closing the connection,
 * `/close-mid` half a body then a close, `/trickle` a head that never ends, `/big-head` 100 KiB of headers, anything else "origin <name>".
 */
export async function startOrigin(
  t: TestContext | { after(fn: () => unknown): void },
  opts: { address: string; name: string; tls?: { key: string; cert: string }; port?: number },
): Promise<{ seen: SeenRequest[]; server: Server; closedEarly: () => number }> {
  const seen: SeenRequest[] = [];
  let closedEarly = 0;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    let bodyBytes = 0;
    req.on("data", (d: Buffer) => (bodyBytes += d.length));
    req.on("end", () => {
      const url = req.url ?? "";
      seen.push({ method: req.method ?? "", url, headers: req.headers, rawHeaders: req.rawHeaders, bodyBytes });
      if (url === "/echo" || url.startsWith("/echo?")) {
        const body = JSON.stringify({ origin: opts.name, method: req.method, url, headers: req.headers, rawHeaders: req.rawHeaders, bodyBytes });
        res.writeHead(200, {
          "content-type": "application/json",
          connection: "keep-alive, x-origin-private",
          "x-origin-private": "1",
          "keep-alive": "timeout=5",
        });
        res.end(body);
      } else if (url.startsWith("/bytes/")) {
        const n = Number(url.slice(7));
        res.writeHead(200, { "content-type": "application/octet-stream", "content-length": n });
        const chunk = Buffer.alloc(64 * 1024, 120);
        let left = n;
        const write = () => {
          while (left > 0) {
            const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
            left -= part.length;
            if (!res.write(part)) return void res.once("drain", write);
          }
          res.end();
        };
        write();
      } else if (url === "/never") {
        res.once("close", () => {
          if (!res.writableFinished) closedEarly++;
        });
      } else if (url === "/trickle") {
        // A head that never ends: a header line every 200 ms, on the raw socket.
        const socket = req.socket;
        socket.write("HTTP/1.1 200 OK\r\n");
        const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : socket.write(`x-slow-${Date.now()}: 1\r\n`)), 200);
        socket.once("close", () => clearInterval(timer));
      } else if (url === "/hangup") {
        req.socket.destroy();
      } else if (url === "/close-mid") {
        res.writeHead(200, { "content-length": 1000 });
        res.write("x".repeat(100), () => req.socket.destroy());
      } else if (url === "/x-accel" || url === "/x-accel.css") {
        // nginx's instructions to a proxy in front of it, and a header of the site's own.
        res.writeHead(200, {
          "content-type": url.endsWith(".css") ? "text/css" : "text/html",
          "cache-control": "max-age=600",
          "x-accel-redirect": "/internal/secret.txt",
          "X-Accel-Buffering": "no",
          "x-accel-charset": "utf-8",
          "x-accel-limit-rate": "1024",
          "x-site": "kept",
        });
        res.end(`origin ${opts.name} ${url}`);
      } else if (url === "/big-head") {
        res.writeHead(200, { "x-big": "a".repeat(100 * 1024) });
        res.end("big");
      } else {
        res.end(`origin ${opts.name}`);
      }
    });
  };
  const server = opts.tls ? createHttpsServer({ key: opts.tls.key, cert: opts.tls.cert }, handler) : createServer(handler);
  // Every header the edge forwards is seen (Node keeps 2,000 raw entries by default).
  server.maxHeadersCount = 0;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? (opts.tls ? 443 : 80), opts.address, () => resolve());
  });
  t.after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { seen, server, closedEarly: () => closedEarly };
}

/** A test CA, a certificate it signed for `names`, and a self-signed one (openssl). */
export function testCertificates(names: string[]): {
  caPem: string;
  caFile: string;
  signed: { key: string; cert: string };
  selfSigned: { key: string; cert: string };
  dispose(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), "edge-origin-certs-"));
  const run = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Edge Test Origin CA"]);
  writeFileSync(join(dir, "san.ext"), `subjectAltName=${names.map((n) => `DNS:${n}`).join(",")}\n`);
  run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", `/CN=${names[0]}`]);
  run(["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "san.ext"]);
  run([
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "self.key",
    "-out",
    "self.pem",
    "-days",
    "2",
    "-subj",
    `/CN=${names[0]}`,
    "-addext",
    `subjectAltName=DNS:${names[0]}`,
  ]);
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  return {
    caPem: read("ca.pem"),
    caFile: join(dir, "ca.pem"),
    signed: { key: read("leaf.key"), cert: read("leaf.pem") },
    selfSigned: { key: read("self.key"), cert: read("self.pem") },
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * A loopback /24 of this test process's own (127.a.b.0 with random a and b), so that test files binding origins on
 * ports 80 and 443 can run at the same time (in other worktrees or suites) without taking each other's addresses.
 * `address(n)` is the n-th address of the block (1 ≤ n ≤ 254).
 */
export function loopbackBlock(): (n: number) => string {
  const a = 1 + Math.floor(Math.random() * 250);
  const b = Math.floor(Math.random() * 256);
  return (n: number) => `127.${a}.${b}.${n}`;
}
