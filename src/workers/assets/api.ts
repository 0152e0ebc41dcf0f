import type { FastifyInstance } from "fastify";
import { formParts } from "../../core/http/multipart.js";
import { ok } from "../../core/http/envelope.js";
import { WorkersErrors } from "../errors.js";
import { WorkerAssets } from "./assets.js";
import { AssetsErrors } from "./errors.js";
import { AssetLimits } from "./manifest.js";

type Params = { account_id: string; name: string };

/** One upload request: base64 text of files of at most 25 MiB each; parts are read and stored one at a time. */
const UPLOAD_LIMITS = { fileSize: Math.ceil((AssetLimits.fileBytes * 4) / 3) + 4, files: 100, fields: 0, fieldSize: 1024 };

/**
 * wrangler 3's assets upload: POST …/scripts/{name}/assets-upload-session with the manifest (an API token with
 * workers_edit), then POST …/workers/assets/upload?base64=true for each bucket, authenticated by the session's token
 * (not an API token: that is how wrangler sends it). The answer of the upload that completes the manifest carries the
 * token the script upload then names in `metadata.assets.jwt`.
 */
export function registerAssetsRoutes(app: FastifyInstance, assets: WorkerAssets): void {
  app.post("/accounts/:account_id/workers/scripts/:name/assets-upload-session", { config: { permission: "workers_edit" } }, async (req) => {
    const p = req.params as Params;
    const body = req.body as { manifest?: unknown } | undefined;
    return ok(await assets.startSession(p.account_id, p.name, body?.manifest));
  });

  app.post("/accounts/:account_id/workers/assets/upload", { config: { permission: "self", ownCredentials: true } }, async (req) => {
    const { token, session } = await assets.sessionOf(req.headers.authorization);
    if (session.accountId !== (req.params as Params).account_id) throw AssetsErrors.badToken();
    if ((req.query as { base64?: string }).base64 !== "true") throw AssetsErrors.notBase64();
    if (!req.isMultipart()) throw WorkersErrors.notMultipart();
    const files = WorkerAssets.filesByHash(session.manifest);
    for await (const part of formParts(req, WorkersErrors.uploadBody, UPLOAD_LIMITS)) {
      await assets.storeFile(session, files, part.field, part.content, part.contentType);
    }
    const missing = await assets.complete(session);
    return ok(missing === 0 ? { jwt: token } : {});
  });
}
