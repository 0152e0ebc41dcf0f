// The origin of the 1 KiB HIT benches (bench/cache/hit-floors.mjs, hit-ab.mjs): nginx serving `1k.js` (1,024 bytes)
// from `dir` on `address`:80 with `Cache-Control: max-age=3600`, so the edge stores it and answers HITs after one MISS.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** Writes the body and nginx's configuration into `dir` and starts nginx (added to `children`, which the bench stops). */
export function startHitOrigin(dir, address, children) {
  writeFileSync(join(dir, "1k.js"), Buffer.alloc(1024, 97));
  writeFileSync(
    join(dir, "nginx.conf"),
    `worker_processes 1; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log; daemon off;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path ${dir}/nginx-body-temp; proxy_temp_path ${dir}/nginx-proxy-temp;
  server { listen ${address}:80; root ${dir}; location / { add_header Cache-Control "max-age=3600"; } } }`,
  );
  children.push(spawn("nginx", ["-c", join(dir, "nginx.conf")], { stdio: "ignore" }));
}
