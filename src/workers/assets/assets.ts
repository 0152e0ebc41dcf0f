import { createHash, randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import type { Logger } from "../../core/logger.js";
import { parseWith } from "../../core/http/validate.js";
import type { Binding } from "../bindings/registry.js";
import type { BindingHandler } from "../bindings/server.js";
import { WorkersCodes } from "../errors.js";
import { AssetsErrors } from "./errors.js";
import { assetHash, parseManifest, type AssetManifest, type ManifestEntry } from "./manifest.js";
import { resolveHtml, resolveNotFound, type Resolution } from "./resolve.js";
import type { AssetBody, AssetConfig, AssetsStore, ScriptAssets } from "./store.js";

/** How long an upload session's token is good for (wrangler's own deploys take seconds; a slow link minutes). */
const SESSION_MS = 60 * 60 * 1000;
/**
 * How much manifest (characters of JSON) an account's sessions in progress may hold: sessions last an hour and each
 * may announce 20,000 files (about 1.3 million characters), so without a bound one account could fill the database,
 * and the memory of the asset collection (which reads every live manifest), with manifests it never deploys. About
 * 25 sessions of the largest manifests at once, thousands of ordinary sites'.
 */
export const UPLOAD_SESSION_MANIFEST_CHARS = 32 * 1024 * 1024;
/** Files per upload bucket, and the bytes a bucket may add up to (one upload request each; wrangler sends three at a time). */
const BUCKET_FILES = 50;
const BUCKET_BYTES = 20 * 1024 * 1024;

/** `assets` of a script upload's metadata, as wrangler 3 sends it. */
export const uploadAssetsSchema = z
  .looseObject({
    jwt: z.string().min(1),
    config: z
      .looseObject({
        html_handling: z.enum(["auto-trailing-slash", "force-trailing-slash", "drop-trailing-slash", "none"]).optional(),
        not_found_handling: z.enum(["single-page-application", "404-page", "none"]).optional(),
        run_worker_first: z.boolean().optional(),
        _redirects: z.string().optional(),
        _headers: z.string().optional(),
      })
      .optional(),
  })
  .optional();
export type UploadAssets = z.infer<typeof uploadAssetsSchema>;

const tokenHash = (token: string) => createHash("sha256").update(token).digest("hex");

/**
 * A token shaped as a JWT (wrangler decodes its payload's `exp` to say an upload took too long); the random third
 * part makes it unguessable, and only its hash is stored, so the token itself is the credential.
 */
function newToken(script: string, expiresAt: number): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `${part({ alg: "HS256", typ: "JWT" })}.${part({ sub: script, exp: Math.floor(expiresAt / 1000) })}.${randomBytes(32).toString("base64url")}`;
}

/** A Worker's assets ready to serve: the manifest, its options, and where each body is. */
interface Served {
  config: AssetConfig;
  manifest: AssetManifest;
  bodies: Map<string, AssetBody>;
}

/** What the assets of a script upload will be, checked before the version starts; `commit` writes them. */
export interface AssetsPlan {
  commit(): Promise<void>;
  /** Puts back what the Worker had (the version did not start). */
  rollback(): Promise<void>;
}

/**
 * Static assets of Workers: wrangler 3's upload protocol (a session announcing the manifest, buckets of files that
 * are not stored yet, a completion token the script upload carries), and serving them before the Worker and through
 * `env.ASSETS`. What a Worker serves is read once per running version (see `served`).
 */
export class WorkerAssets {
  /** script → version id → what that version serves; at most the live version and the one about to replace it. */
  private readonly cache = new Map<string, Map<string, Promise<Served | undefined>>>();
  /** What each of those promises resolved to, so that edge traffic does not wait a turn for a value that is known. */
  private readonly settled = new WeakMap<Promise<Served | undefined>, Served | undefined>();

  constructor(
    private readonly store: AssetsStore,
    /** The account and version of the live version of a Worker, when it runs. */
    private readonly live: (script: string) => { accountId: string; versionId: string } | undefined,
    private readonly log: Logger,
  ) {}

  /** POST …/scripts/{name}/assets-upload-session: `buckets` lists the hashes the account does not have yet. */
  async startSession(accountId: string, script: string, manifestRaw: unknown): Promise<{ jwt: string; buckets: string[][] }> {
    const manifest = parseManifest(manifestRaw);
    const held = await this.store.liveManifestChars(accountId);
    if (held + JSON.stringify(manifest).length > UPLOAD_SESSION_MANIFEST_CHARS) throw AssetsErrors.tooManySessions();
    const expiresAt = Date.now() + SESSION_MS;
    const token = newToken(script, expiresAt);
    await this.store.createSession(tokenHash(token), { accountId, script, manifest, expiresAt });
    const sizes = new Map(Object.values(manifest).map((e) => [e.hash, e.size]));
    const have = await this.store.bodies(accountId, [...sizes.keys()]);
    const buckets: string[][] = [];
    let bucket: string[] = [];
    let bytes = 0;
    for (const [hash, size] of sizes) {
      if (have.has(hash)) continue;
      if (bucket.length > 0 && (bucket.length >= BUCKET_FILES || bytes + size > BUCKET_BYTES)) {
        buckets.push(bucket);
        bucket = [];
        bytes = 0;
      }
      bucket.push(hash);
      bytes += size;
    }
    if (bucket.length) buckets.push(bucket);
    return { jwt: token, buckets };
  }

  /** The session a bearer token names, or the 401. */
  async sessionOf(authorization: string | undefined) {
    const token = /^Bearer (\S+)$/i.exec(authorization ?? "")?.[1];
    const session = token && (await this.store.session(tokenHash(token)));
    if (!token || !session) throw AssetsErrors.badToken();
    return { token, session };
  }

  /**
   * Stores one uploaded file of a session (its part: the hash as name, base64 content, the content type to answer
   * with). The content must have the hash and the size the manifest announced.
   */
  async storeFile(
    session: { accountId: string },
    files: ReadonlyMap<string, [path: string, entry: ManifestEntry]>,
    hash: string,
    base64: Buffer,
    contentType: string,
  ): Promise<void> {
    const entry = files.get(hash);
    if (!entry) throw AssetsErrors.notInSession(hash.slice(0, 64));
    const text = base64.toString("latin1").replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) throw AssetsErrors.notBase64Content(hash);
    const bytes = Buffer.from(text, "base64");
    if (bytes.length !== entry[1].size) throw AssetsErrors.sizeMismatch(hash, entry[1].size, bytes.length);
    if ((await assetHash(Buffer.from(text, "latin1"), entry[0])) !== hash) throw AssetsErrors.hashMismatch(hash);
    // The multipart parser keeps a part's media type without its parameters: text is labelled UTF-8, as wrangler does.
    const type =
      contentType === "" || contentType === "application/null" ? null : contentType.startsWith("text/") ? `${contentType}; charset=utf-8` : contentType;
    await this.store.putBody(session.accountId, hash, type, bytes);
  }

  /** A session's files by hash (one path for each). */
  static filesByHash(manifest: AssetManifest): Map<string, [string, ManifestEntry]> {
    return new Map(Object.entries(manifest).map(([path, e]) => [e.hash, [path, e]]));
  }

  /** Whether every file of the session's manifest is stored (the completion token may then be handed out). */
  async complete(session: { accountId: string; manifest: AssetManifest }): Promise<number> {
    const hashes = new Set(Object.values(session.manifest).map((e) => e.hash));
    const have = await this.store.bodies(session.accountId, [...hashes]);
    return hashes.size - have.size;
  }

  /**
   * Checks the `assets` of a script upload (and its assets binding) against the session its token names: same account
   * and Worker, every file stored. Without `assets`, the Worker keeps none (unless `keep_assets`).
   */
  async plan(accountId: string, script: string, up: UploadAssets, keep: boolean, bindings: readonly Binding[]): Promise<AssetsPlan | undefined> {
    const before = await this.store.scriptAssets(accountId, script);
    let next: ScriptAssets | undefined;
    if (up) {
      const { session } = await this.sessionOf(`Bearer ${up.jwt}`).catch(() => {
        throw AssetsErrors.badToken();
      });
      if (session.accountId !== accountId) throw AssetsErrors.badToken();
      if (session.script !== script) throw AssetsErrors.sessionOtherScript(session.script);
      const missing = await this.complete(session);
      if (missing > 0) throw AssetsErrors.incomplete(missing);
      const c = up.config ?? {};
      if (c._redirects) throw AssetsErrors.config("_redirects files are not supported by this platform; remove _redirects from the assets directory");
      if (c._headers) throw AssetsErrors.config("_headers files are not supported by this platform; remove _headers from the assets directory");
      next = {
        manifest: session.manifest,
        config: {
          html_handling: c.html_handling ?? "auto-trailing-slash",
          not_found_handling: c.not_found_handling ?? "none",
          run_worker_first: c.run_worker_first ?? false,
        },
      };
    } else if (keep) {
      next = before;
    }
    const binding = bindings.find((b) => b.type === "assets");
    if (binding && !next) throw AssetsErrors.bindingWithoutAssets(binding.name);
    if (!next && !before) return undefined;
    return {
      commit: () => this.store.setScriptAssets(accountId, script, next),
      rollback: () => this.store.setScriptAssets(accountId, script, before),
    };
  }

  /** Whether a Worker has static assets (they are the Worker's, not a version's). */
  async has(accountId: string, script: string): Promise<boolean> {
    return (await this.store.scriptAssets(accountId, script)) !== undefined;
  }

  /** Forgets a deleted Worker's assets (the bodies stay the account's, for its next upload). */
  async remove(accountId: string, script: string): Promise<void> {
    this.cache.delete(script);
    await this.store.setScriptAssets(accountId, script, undefined);
  }

  /**
   * Reads what version `versionId` of `script` will serve, before it takes traffic: serving a file then never waits on
   * the store, and keeps working while the store is unreachable (workers keep serving through a PostgreSQL outage).
   */
  async prepare(accountId: string, script: string, versionId: string): Promise<void> {
    const versions = this.cache.get(script) ?? new Map<string, Promise<Served | undefined>>();
    const liveVersion = this.live(script)?.versionId;
    for (const v of versions.keys()) if (v !== liveVersion) versions.delete(v);
    this.cache.set(script, versions);
    await this.load(accountId, script, versionId, versions);
  }

  private load(accountId: string, script: string, versionId: string, versions: Map<string, Promise<Served | undefined>>): Promise<Served | undefined> {
    const served = (async () => {
      const assets = await this.store.scriptAssets(accountId, script);
      if (!assets) return undefined;
      const bodies = await this.store.bodies(accountId, [...new Set(Object.values(assets.manifest).map((e) => e.hash))]);
      return { ...assets, bodies };
    })();
    versions.set(versionId, served);
    served.then(
      (value) => this.settled.set(served, value),
      () => undefined,
    );
    served.catch(() => {
      if (versions.get(versionId) === served) versions.delete(versionId);
    });
    return served;
  }

  /** The assets the live version of `script` serves: prepared when it started, or read on first use if that failed. */
  private served(script: string): Promise<Served | undefined> | undefined {
    const live = this.live(script);
    if (!live) return undefined;
    let versions = this.cache.get(script);
    if (!versions) this.cache.set(script, (versions = new Map()));
    return versions.get(live.versionId) ?? this.load(live.accountId, script, live.versionId, versions);
  }

  /**
   * Edge traffic to a Worker: a GET or HEAD that matches a file (or one of its html_handling redirects) is answered
   * here, before the Worker; so is a not-found navigation of a single-page application, and any not-found request of
   * a Worker without a fetch handler (with not_found_handling, or a plain 404; other methods than GET and HEAD a
   * 405, as such a Worker, an assets-only one for instance, has nothing else to answer them). Anything else goes to
   * `worker`.
   */
  serveEdge(script: string, req: IncomingMessage, res: ServerResponse, handlers: readonly string[], worker: () => void): void | Promise<void> {
    if (req.method !== "GET" && req.method !== "HEAD" && handlers.includes("fetch")) return worker();
    const pending = this.served(script);
    // Known once the version has started (prepare), which is the usual case: answered in this turn.
    if (pending && this.settled.has(pending)) return this.serveEdgeWith(this.settled.get(pending), req, res, handlers, worker);
    return Promise.resolve(pending).then((served) => this.serveEdgeWith(served, req, res, handlers, worker));
  }

  private serveEdgeWith(served: Served | undefined, req: IncomingMessage, res: ServerResponse, handlers: readonly string[], worker: () => void): void {
    if (!served || served.config.run_worker_first) return worker();
    if (req.method !== "GET" && req.method !== "HEAD") {
      req.resume();
      res.writeHead(405, { allow: "GET, HEAD", "content-length": 0 }).end();
      return;
    }
    const path = decodedPath(req.url);
    const has = (p: string) => p in served.manifest;
    let hit = path === undefined ? ({ kind: "none" } as Resolution) : resolveHtml(path, has, served.config.html_handling);
    const noFetch = !handlers.includes("fetch");
    if (hit.kind === "none" && path !== undefined) {
      const navigation = req.headers["sec-fetch-mode"] === "navigate";
      if (noFetch || (navigation && served.config.not_found_handling === "single-page-application")) {
        hit = resolveNotFound(path, has, served.config.not_found_handling);
      }
    }
    if (hit.kind === "none" && !noFetch) return worker();
    this.answer(served, hit, req, res);
  }

  /** The binding server's handler of `env.ASSETS` calls (the call's resource is the calling script). */
  readonly bindingHandler: BindingHandler = (call, req, res) =>
    void this.serveBinding(call.accountId, call.resource, req, res).catch((err: unknown) => {
      this.log.error({ err }, "static assets binding call failed");
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });

  /** `env.ASSETS.fetch(request)`: the Worker's own files, with html_handling and not_found_handling, never the Worker. */
  async serveBinding(accountId: string, script: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.resume();
    const live = this.live(script);
    const served = live?.accountId === accountId ? await this.served(script) : undefined;
    if (!served) return plain(res, 404, "This Worker has no static assets\n");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-length": 0 }).end();
      return;
    }
    const path = decodedPath(req.url);
    const has = (p: string) => p in served.manifest;
    let hit = path === undefined ? ({ kind: "none" } as Resolution) : resolveHtml(path, has, served.config.html_handling);
    if (hit.kind === "none" && path !== undefined) hit = resolveNotFound(path, has, served.config.not_found_handling);
    this.answer(served, hit, req, res);
  }

  private answer(served: Served, hit: Resolution, req: IncomingMessage, res: ServerResponse): void {
    if (hit.kind === "none") return plain(res, 404, "Not Found\n");
    if (hit.kind === "redirect") {
      const query = req.url?.includes("?") ? req.url.slice(req.url.indexOf("?")) : "";
      res.writeHead(307, { location: encodeURI(hit.to) + query, "content-length": 0 }).end();
      return;
    }
    const entry = served.manifest[hit.path];
    const body = served.bodies.get(entry.hash);
    if (!body) {
      this.log.error({ path: hit.path, hash: entry.hash }, "static asset body missing");
      return plain(res, 404, "Not Found\n");
    }
    const etag = `"${entry.hash}"`;
    const headers: Record<string, string | number> = { etag, "cache-control": "public, max-age=0, must-revalidate" };
    if (body.contentType) headers["content-type"] = body.contentType;
    const inm = req.headers["if-none-match"];
    if (hit.status === 200 && inm && inm.split(",").some((t) => t.trim().replace(/^W\//, "") === etag)) {
      res.writeHead(304, headers).end();
      return;
    }
    headers["content-length"] = body.size;
    res.writeHead(hit.status, headers);
    if (req.method === "HEAD") return void res.end();
    const stream = this.store.readBody(body.contentId);
    stream.on("error", (err) => {
      this.log.error({ err: err.message, path: hit.path }, "reading a static asset failed");
      res.destroy();
    });
    res.once("close", () => stream.destroy());
    stream.pipe(res);
  }
}

/** The request's path, percent-decoded; undefined when it does not decode (it can then match no file). */
function decodedPath(url: string | undefined): string | undefined {
  const raw = (url ?? "/").split("?")[0];
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(text) }).end(text);
}

/** The `assets` metadata of an upload, checked. */
export const parseUploadAssets = (raw: unknown): UploadAssets => parseWith(uploadAssetsSchema, raw, WorkersCodes.validation);
