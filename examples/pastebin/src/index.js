// Pastebin: POST /pastes stores a paste in D1 (optionally expiring), GET /pastes/<id> serves it and counts the view in
// the paste's own Durable Object, GET /pastes lists the newest, GET /stats tells how many there are and what the last
// cron sweep did. The cron trigger (wrangler.toml) removes expired pastes every minute.
import { DurableObject } from "cloudflare:workers";

/** One object per paste (idFromName(paste id)): its view count, kept in the object's own SQLite storage. */
export class ViewCounter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS views (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL)");
  }

  /** Counts one view; answers the total. Called through the stub (RPC). */
  hit() {
    return this.ctx.storage.sql.exec("INSERT INTO views VALUES (1, 1) ON CONFLICT (one) DO UPDATE SET n = n + 1 RETURNING n").one().n;
  }
}

const MAX_PASTE_BYTES = 64 * 1024;
const MAX_TTL_SECONDS = 30 * 24 * 3600;

const json = (body, status = 200) => Response.json(body, { status });
const newId = () => crypto.randomUUID().replaceAll("-", "").slice(0, 12);

async function createPaste(req, env) {
  const body = await req.text();
  if (body.length === 0) return json({ error: "empty paste" }, 400);
  if (new TextEncoder().encode(body).length > MAX_PASTE_BYTES) return json({ error: `a paste holds at most ${MAX_PASTE_BYTES} bytes` }, 413);
  const ttl = new URL(req.url).searchParams.get("ttl");
  if (ttl !== null && !(/^\d+$/.test(ttl) && Number(ttl) >= 1 && Number(ttl) <= MAX_TTL_SECONDS)) {
    return json({ error: `ttl: whole seconds, 1 to ${MAX_TTL_SECONDS}` }, 400);
  }
  const now = Date.now();
  const paste = { id: newId(), created_at: now, expires_at: ttl === null ? null : now + Number(ttl) * 1000 };
  await env.DB.prepare("INSERT INTO pastes (id, body, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)")
    .bind(paste.id, body, paste.created_at, paste.expires_at)
    .run();
  // Announce the new paste on the queue ([[queues.producers]] in wrangler.toml); queue() below receives it.
  await env.NEW_PASTES.send({ id: paste.id, bytes: body.length });
  return json({ ...paste, url: new URL(`/pastes/${paste.id}`, req.url).href }, 201);
}

async function readPaste(id, env) {
  const paste = await env.DB.prepare("SELECT body FROM pastes WHERE id = ?1 AND (expires_at IS NULL OR expires_at > ?2)").bind(id, Date.now()).first();
  if (!paste) return json({ error: "no such paste (or it expired)" }, 404);
  const views = await env.VIEWS.get(env.VIEWS.idFromName(id)).hit();
  return new Response(paste.body, { headers: { "content-type": "text/plain; charset=utf-8", "x-views": String(views) } });
}

async function listPastes(env) {
  const { results } = await env.DB.prepare(
    "SELECT id, length(body) AS bytes, created_at, expires_at FROM pastes WHERE expires_at IS NULL OR expires_at > ?1 ORDER BY created_at DESC LIMIT 20",
  )
    .bind(Date.now())
    .all();
  return json(results);
}

async function stats(env) {
  const [count, sweep] = await env.DB.batch([
    env.DB.prepare("SELECT count(*) AS pastes FROM pastes"),
    env.DB.prepare("SELECT at, removed FROM sweeps ORDER BY at DESC LIMIT 1"),
  ]);
  return json({ pastes: count.results[0].pastes, last_sweep: sweep.results[0] ?? null });
}

export default {
  async fetch(req, env) {
    const { pathname } = new URL(req.url);
    const [, section, id, ...rest] = pathname.split("/");
    if (section === "pastes" && rest.length === 0) {
      if (!id && req.method === "POST") return createPaste(req, env);
      if (!id && req.method === "GET") return listPastes(env);
      if (id && req.method === "GET") return readPaste(id, env);
      return json({ error: "method not allowed" }, 405);
    }
    if (pathname === "/stats" && req.method === "GET") return stats(env);
    return json({ error: "not found: try POST /pastes, GET /pastes, GET /pastes/<id> or GET /stats" }, 404);
  },

  /** Every minute (wrangler.toml [triggers]): removes expired pastes and records the sweep. */
  async scheduled(controller, env) {
    const at = controller.scheduledTime;
    await env.DB.batch([
      env.DB.prepare("INSERT OR REPLACE INTO sweeps (at, removed) SELECT ?1, count(*) FROM pastes WHERE expires_at <= ?1").bind(at),
      env.DB.prepare("DELETE FROM pastes WHERE expires_at <= ?1").bind(at),
    ]);
  },

  // The announcements ([[queues.consumers]] in wrangler.toml): one log line per new paste.
  async queue(batch) {
    for (const message of batch.messages) {
      console.log(`new paste ${message.body.id}: ${message.body.bytes} bytes`);
      message.ack();
    }
  },
};
