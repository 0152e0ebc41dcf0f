// The floor for any Node proxy: a bare pass-through with an undici keep-alive pool and nothing else
// (no auth, no logs, no usage). The gap between it and the gateway is the gateway's own work.
import { createServer } from "node:http";
import { Pool } from "undici";

const upstream = new URL(process.argv[2]);
const pool = new Pool(upstream.origin, { connections: 256 });
const server = createServer(async (req, res) => {
  try {
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    const up = await pool.request({ path: upstream.pathname + "/chat/completions", method: "POST", headers, body: req });
    res.writeHead(up.statusCode, up.headers);
    for await (const c of up.body) res.write(c);
    res.end();
  } catch (e) {
    res.writeHead(502).end(String(e));
  }
});
server.keepAliveTimeout = 65_000;
process.on("SIGINT", () => process.exit(0));
server.listen(0, "127.0.0.1", () => process.stdout.write(`${server.address().port}\n`));
