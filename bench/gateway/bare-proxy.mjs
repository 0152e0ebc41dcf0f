// The floor for any Node proxy: a bare `node:http` pass-through with a keep-alive http.Agent, the request body
// piped to the upstream and the answer piped back, and nothing else (no auth, no logs, no usage, no parsing).
// Only the hop-by-hop headers of the answer are dropped, which any proxy must do. The gap between it and the
// gateway is the gateway's own work.
import { Agent, createServer, request } from "node:http";

const upstream = new URL(process.argv[2]);
const path = upstream.pathname + "/chat/completions";
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

const server = createServer((req, res) => {
  const up = request({ host: upstream.hostname, port: upstream.port, path, method: req.method, headers: req.headers, agent }, (answer) => {
    const h = answer.headers;
    delete h.connection;
    delete h["keep-alive"];
    delete h["transfer-encoding"];
    res.writeHead(answer.statusCode, h);
    answer.pipe(res);
  });
  up.on("error", (e) => {
    if (res.headersSent) res.destroy();
    else res.writeHead(502).end(String(e));
  });
  req.pipe(up);
});
server.keepAliveTimeout = 65_000;
process.on("SIGINT", () => process.exit(0));
server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
