// A platform whose GraphQL Analytics rollups hold 30 days of data, for the benches of this folder. Seeds the rollups
// of a stopped platform's SQLite state (one zone and one account: 30 days x 1,440 minutes x `combos` dimension
// combinations each, and four other zones as many, so the table is five times the scope read), then starts it again.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { startTestPlatform } from "../../dist/core/testing/platform.js";

export const MINUTES = 30 * 1440;

export async function seededPlatform(combos) {
  const stateDir = mkdtempSync(join(tmpdir(), "bench-analytics-"));
  let p = await startTestPlatform({ stateDir });
  const zone = (await p.api("POST", "/zones", { name: "bench-analytics.example", account: { id: p.accountId } })).body.result.id;
  const accountId = p.accountId;
  const credentials = { accountId, email: p.email, apiKey: p.apiKey, token: p.token };
  await p.stop();

  // The schema is the platform's own (its migrations ran at the first start).
  const db = new Database(join(stateDir, "db", "analytics.sqlite"));
  const insert = db.prepare(
    `INSERT INTO minute_rollups (dataset, scope, account_id, minute, d1, d2, d3, d4, d5, node_id, count, s1, s2, s3, s4, s5, s6, s7, s8)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', 'bench', ?, ?, ?, ?, 0, 0, 0, 0, 0)`,
  );
  const now = Math.floor(Date.now() / 60_000) * 60;
  const started = performance.now();
  const seed = db.transaction((dataset, scope, dims) => {
    for (let m = 0; m < MINUTES; m++) {
      const minute = now - (MINUTES - m) * 60;
      for (let c = 0; c < combos; c++) insert.run(dataset, scope, accountId, minute, ...dims(c), 1 + (c % 7), 1000 * c, c % 2, 0);
    }
  });
  const http = (c) => [`host${c}.bench-analytics.example`, c % 3 ? "GET" : "POST", c % 5 ? "200" : "404", "dynamic"];
  seed("http_requests", zone, http);
  for (let z = 0; z < 4; z++) seed("http_requests", `other-zone-${z}`, http);
  seed("workers_invocations", accountId, (c) => [`script${c}`, c % 9 ? "success" : "scriptThrewException", "v1", ""]);
  // The hourly rollups the platform writes beside the minutes (rollups/sql.ts), from the seeded minutes.
  db.exec(`INSERT INTO hour_rollups SELECT dataset, scope, MIN(account_id), minute - (minute % 3600), d1, d2, d3, d4, d5, node_id, SUM(count),
    SUM(s1), SUM(s2), SUM(s3), SUM(s4), SUM(s5), SUM(s6), SUM(s7), SUM(s8) FROM minute_rollups
    GROUP BY dataset, scope, minute - (minute % 3600), d1, d2, d3, d4, d5, node_id`);
  const rows = db.prepare("SELECT COUNT(*) AS n FROM minute_rollups").get().n;
  db.close();
  const seededMs = performance.now() - started;

  p = await startTestPlatform({ stateDir, credentials });
  /** The platform process's CPU time so far (user + system), in ms; /proc counts in clock ticks (10 ms on Linux). */
  const serverCpuMs = () => {
    const fields = readFileSync(`/proc/${p.process.pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  const stop = async () => {
    await p.stop();
    rmSync(stateDir, { recursive: true, force: true });
  };
  return { p, zone, accountId, now, rows, seededMs, serverCpuMs, stop };
}
