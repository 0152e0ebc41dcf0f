import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { Transform, type Readable } from "node:stream";
import type { ServerResponse } from "node:http";
import { D1Errors } from "./errors.js";
import { D1_LIMITS } from "./limits.js";

/** What a signed URL lets its bearer do: download one export, or upload one import's SQL (never both, never more). */
interface Transfer {
  kind: "export" | "import";
  accountId: string;
  uuid: string;
  file: string;
  expires: number;
  /** An import's MD5 once its body is uploaded. */
  uploadedMd5?: string;
}

/**
 * The signed URLs of exports and imports. wrangler fetches an export's `signed_url` and PUTs an import to its
 * `upload_url` without credentials (the hosted API hands out presigned R2 URLs), so the URL itself is the
 * credential: 32 random bytes, valid for D1_LIMITS.transferTtlMs, for one database of one account, kept in this
 * process only (a restart forgets them; the client asks again). Files live in `<dir>`, mode 0600.
 */
export class D1Transfers {
  private readonly byToken = new Map<string, Transfer>();

  constructor(private readonly dir: string) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  private sweep(): void {
    const now = Date.now();
    for (const [token, t] of this.byToken) {
      if (t.expires > now) continue;
      this.byToken.delete(token);
      rmSync(t.file, { force: true });
    }
  }

  /** A new transfer and the token that names it (also its file's name); the account's oldest ends past its limit. */
  open(kind: Transfer["kind"], accountId: string, uuid: string): { token: string; file: string } {
    this.sweep();
    const mine = [...this.byToken].filter(([, t]) => t.accountId === accountId);
    for (const [token, t] of mine.slice(0, Math.max(0, mine.length - D1_LIMITS.transfersPerAccount + 1))) {
      this.byToken.delete(token);
      rmSync(t.file, { force: true });
    }
    const token = randomBytes(32).toString("base64url");
    const file = join(this.dir, `${token}.sql`);
    this.byToken.set(token, { kind, accountId, uuid, file, expires: Date.now() + D1_LIMITS.transferTtlMs });
    return { token, file };
  }

  private live(token: string, kind: Transfer["kind"]): Transfer {
    const t = this.byToken.get(token);
    if (!t || t.kind !== kind || t.expires <= Date.now()) throw D1Errors.transferNotFound();
    return t;
  }

  /** Streams an export's SQL to `res`. */
  download(token: string, res: ServerResponse): Promise<void> {
    const t = this.live(token, "export");
    res.writeHead(200, { "content-type": "application/sql", "content-length": String(statSync(t.file).size) });
    return pipeline(createReadStream(t.file), res);
  }

  /** Stores an import's body (at most D1_LIMITS.importBytes) and answers its MD5, which the client checks as the ETag. */
  async upload(token: string, body: Readable): Promise<string> {
    const t = this.live(token, "import");
    const md5 = createHash("md5");
    let size = 0;
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        if (size > D1_LIMITS.importBytes) return cb(D1Errors.importTooLarge());
        md5.update(chunk);
        cb(null, chunk);
      },
    });
    try {
      await pipeline(body, count, createWriteStream(t.file, { mode: 0o600 }));
    } catch (err) {
      rmSync(t.file, { force: true });
      throw err;
    }
    t.uploadedMd5 = md5.digest("hex");
    return t.uploadedMd5;
  }

  /** The uploaded file of the import named `token` for this database, when its MD5 is `etag`; the transfer ends. */
  takeUpload(token: string, accountId: string, uuid: string, etag: string): string {
    const t = this.byToken.get(token);
    if (!t || t.kind !== "import" || t.accountId !== accountId || t.uuid !== uuid || t.uploadedMd5 !== etag) throw D1Errors.importNotUploaded();
    this.byToken.delete(token);
    return t.file;
  }

  close(): void {
    this.byToken.clear();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
