// The floors the edge-process benches compare against, as one process or as `workers` processes accepting on one
// listening socket (cluster with SCHED_NONE: the kernel hands each connection to whichever process accepts it):
//   node cluster-floors.cjs proxy <port> <workers> <origin address>   a bare Node `http` pass-through on an undici Pool
//   node cluster-floors.cjs bare <port> <workers>                     a bare Node server answering a fixed 1 KiB body
"use strict";
const cluster = require("node:cluster");
const { createServer } = require("node:http");
const [kind, port, workers, origin] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), process.argv[5]];
cluster.schedulingPolicy = cluster.SCHED_NONE;
if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
} else if (kind === "proxy") {
  const { Pool } = require("undici");
  const pool = new Pool(`http://${origin}:80`, { connections: 256 });
  createServer((req, res) => {
    pool.request({ path: req.url, method: req.method, headers: { host: "origin" } }).then(
      (a) => {
        res.writeHead(a.statusCode, a.headers);
        a.body.pipe(res);
      },
      () => res.writeHead(502).end(),
    );
  }).listen(port, "127.0.0.1");
} else {
  const body = Buffer.alloc(1024, 97);
  createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/javascript", "content-length": 1024 });
    res.end(body);
  }).listen(port, "127.0.0.1");
}
