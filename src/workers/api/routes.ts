import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { EdgeError } from "../../core/errors.js";
import { ok } from "../../core/http/envelope.js";
import { requireAccount } from "../../core/http/app.js";
import { parseWith } from "../../core/http/validate.js";
import type { Permission } from "../../core/auth/permissions.js";
import type { ScriptDeployer } from "../deployer.js";
import { WorkerCodes, type ScriptRecord } from "../model.js";
import type { WorkersStore } from "../store.js";
import { bindingName, readUpload, secretText } from "./upload.js";

export interface WorkersRouteDeps {
  store: WorkersStore;
  deployer: ScriptDeployer;
  /** The URL a script is served at, e.g. http://name.workers.localhost:8787 */
  urlOf(name: string): string;
  /** The newest compatibility date the running workerd implements. */
  newestCompatibilityDate(): string | undefined;
  workersDomain: string;
}

type Params = { account_id: string; name: string; secret: string };

const secretSchema = z.object({
  name: bindingName(),
  text: secretText(),
  type: z.literal("secret_text").default("secret_text"),
});

/** The script as the hosted API summarises it. */
function summary(s: ScriptRecord) {
  return {
    id: s.name,
    etag: s.etag,
    handlers: ["fetch"],
    has_modules: true,
    compatibility_date: s.compatibilityDate,
    compatibility_flags: s.compatibilityFlags,
    usage_model: "standard",
    created_on: s.createdOn,
    modified_on: s.modifiedOn,
  };
}

const notFound = () => new EdgeError(404, WorkerCodes.scriptNotFound, "This Worker does not exist on your account.");

export function registerWorkersRoutes(app: FastifyInstance, deps: WorkersRouteDeps): void {
  const { store, deployer } = deps;
  const base = "/accounts/:account_id/workers";

  /** Checks the permission and returns the script, or 404 (`code` differs for the services view). */
  const scriptOf = (req: FastifyRequest, perm: Permission, code: number = WorkerCodes.scriptNotFound) => {
    const p = req.params as Params;
    requireAccount(req, p.account_id, perm);
    const s = store.get(p.account_id, p.name);
    if (!s) throw new EdgeError(404, code, code === WorkerCodes.scriptNotFound ? "This Worker does not exist on your account." : `Worker ${p.name} not found`);
    return s;
  };

  /** Bindings as settings show them: secrets by name and type only. */
  const bindingsOf = (s: ScriptRecord) => [...s.bindings, ...store.secretNames(s.accountId, s.name).map((name) => ({ name, type: "secret_text" }))];

  /** Said on upload when workerd is older than the script's compatibility date (wrangler's local mode warns alike). */
  const dateMessages = (s: ScriptRecord) => {
    const newest = deps.newestCompatibilityDate();
    if (!newest || s.compatibilityDate <= newest) return [];
    const message = `compatibility_date ${s.compatibilityDate} is later than this platform's workerd supports; the Worker runs with ${newest}`;
    return [{ code: WorkerCodes.compatibilityDateLowered, message }];
  };

  app.put(`${base}/scripts/:name`, async (req) => {
    const p = req.params as Params;
    requireAccount(req, p.account_id, "workers_edit");
    const upload = await readUpload(req);
    const s = await deployer.upload(p.account_id, p.name, upload);
    return ok(
      {
        ...summary(s),
        id: s.name,
        deployment_id: s.versionId,
        startup_time_ms: 0,
        url: deps.urlOf(s.name),
      },
      undefined,
      dateMessages(s),
    );
  });

  // Versions: this platform keeps one live version per script, so uploading a version deploys it at once;
  // a deployment may then only name that version at 100% (what `wrangler deploy` does right after).
  const versionView = (s: ScriptRecord) => ({
    id: s.versionId,
    number: 1,
    metadata: { created_on: s.modifiedOn, modified_on: s.modifiedOn, source: "api", has_preview: false },
    resources: { script: { etag: s.etag, handlers: ["fetch"] }, bindings: bindingsOf(s) },
    startup_time_ms: 0,
  });
  app.post(`${base}/scripts/:name/versions`, async (req) => {
    const p = req.params as Params;
    requireAccount(req, p.account_id, "workers_edit");
    const s = await deployer.upload(p.account_id, p.name, await readUpload(req));
    return ok(versionView(s), undefined, dateMessages(s));
  });
  app.get(`${base}/scripts/:name/versions`, async (req) => {
    const s = scriptOf(req, "workers_read");
    return ok({ items: [versionView(s)] }, { page: 1, per_page: 1, count: 1, total_count: 1, total_pages: 1 });
  });
  app.post(`${base}/scripts/:name/deployments`, async (req) => {
    const s = scriptOf(req, "workers_edit");
    const body = parseWith(
      z.object({
        strategy: z.literal("percentage").default("percentage"),
        versions: z.array(z.object({ version_id: z.string(), percentage: z.number() })).min(1),
      }),
      req.body ?? {},
      WorkerCodes.validation,
    );
    const [only] = body.versions;
    if (body.versions.length !== 1 || only.version_id !== s.versionId || only.percentage !== 100) {
      throw new EdgeError(400, WorkerCodes.validation, `This platform serves one version per Worker: deploy its latest version (${s.versionId}) at 100%`);
    }
    return ok({ id: s.versionId, source: "api", strategy: "percentage", created_on: s.modifiedOn, versions: body.versions });
  });
  app.patch(`${base}/scripts/:name/script-settings`, async (req) => {
    scriptOf(req, "workers_edit");
    // Logpush, tail consumers and observability do not exist here; the call is accepted so deploys proceed.
    return ok({ logpush: false, tail_consumers: [], observability: { enabled: false } });
  });

  app.get(`${base}/scripts`, async (req) => {
    const p = req.params as Params;
    requireAccount(req, p.account_id, "workers_read");
    return ok(store.list(p.account_id).map(summary));
  });

  // The hosted API answers with the modules as multipart/form-data, one part per module.
  app.get(`${base}/scripts/:name`, async (req, reply) => {
    const s = scriptOf(req, "workers_read");
    const run = await store.runnable(s, new Map());
    const form = new FormData();
    const types = {
      esModule: "application/javascript+module",
      commonJsModule: "application/javascript",
      text: "text/plain",
      data: "application/octet-stream",
      wasm: "application/wasm",
      json: "application/json",
    };
    for (const m of run.modules) form.append(m.name, new Blob([m.content], { type: types[m.kind] }), m.name);
    const res = new Response(form);
    return reply.header("content-type", res.headers.get("content-type")!).send(Buffer.from(await res.arrayBuffer()));
  });

  // `wrangler delete` removes the service; here a service is its one script.
  for (const path of [`${base}/scripts/:name`, `${base}/services/:name`]) {
    app.delete(path, async (req) => {
      const p = req.params as Params;
      requireAccount(req, p.account_id, "workers_edit");
      await deployer.remove(p.account_id, p.name);
      return ok({ id: p.name });
    });
  }

  app.get(`${base}/scripts/:name/settings`, async (req) => {
    const s = scriptOf(req, "workers_read");
    return ok({
      bindings: bindingsOf(s),
      compatibility_date: s.compatibilityDate,
      compatibility_flags: s.compatibilityFlags,
      logpush: false,
      placement: {},
      tail_consumers: [],
      usage_model: "standard",
    });
  });

  app.get(`${base}/scripts/:name/deployments`, async (req) => {
    const s = scriptOf(req, "workers_read");
    const deployment = {
      id: s.versionId,
      source: "api",
      strategy: "percentage",
      created_on: s.modifiedOn,
      versions: [{ version_id: s.versionId, percentage: 100 }],
    };
    return ok({ deployments: [deployment] });
  });

  app.get(`${base}/services/:name`, async (req) => {
    const s = scriptOf(req, "workers_read", WorkerCodes.serviceNotFound);
    return ok({
      id: s.name,
      default_environment: { environment: "production", created_on: s.createdOn, modified_on: s.modifiedOn, script: summary(s) },
      created_on: s.createdOn,
      modified_on: s.modifiedOn,
    });
  });

  app.get(`${base}/workers/:name`, async (req) => {
    const s = scriptOf(req, "workers_read");
    return ok({
      id: s.name,
      name: s.name,
      subdomain: { enabled: true, previews_enabled: false },
      created_on: s.createdOn,
      updated_on: s.modifiedOn,
      url: deps.urlOf(s.name),
    });
  });

  // Every script is served at <name>.<workers domain>; the toggle is accepted and reported as on.
  const subdomainState = async (req: FastifyRequest) => {
    scriptOf(req, "workers_read");
    return ok({ enabled: true, previews_enabled: false });
  };
  app.get(`${base}/scripts/:name/subdomain`, subdomainState);
  app.post(`${base}/scripts/:name/subdomain`, async (req) => {
    scriptOf(req, "workers_edit");
    return ok({ enabled: true, previews_enabled: false });
  });

  app.get(`${base}/subdomain`, async (req) => {
    const p = req.params as Params;
    requireAccount(req, p.account_id, "workers_read");
    return ok({ subdomain: deps.workersDomain });
  });

  app.get(`${base}/scripts/:name/secrets`, async (req) => {
    const s = scriptOf(req, "workers_read");
    return ok(store.secretNames(s.accountId, s.name).map((name) => ({ name, type: "secret_text" })));
  });

  app.get(`${base}/scripts/:name/secrets/:secret`, async (req) => {
    const s = scriptOf(req, "workers_read");
    const { secret } = req.params as Params;
    if (!store.hasSecret(s.accountId, s.name, secret)) throw new EdgeError(404, WorkerCodes.secretNotFound, `This Worker has no secret named ${secret}`);
    return ok({ name: secret, type: "secret_text" });
  });

  app.put(`${base}/scripts/:name/secrets`, async (req) => {
    const p = req.params as Params;
    requireAccount(req, p.account_id, "workers_edit");
    const body = parseWith(secretSchema, req.body ?? {}, WorkerCodes.validation);
    if (!store.get(p.account_id, p.name)) throw notFound();
    await deployer.changeSecret(p.account_id, p.name, body.name, body.text);
    return ok({ name: body.name, type: "secret_text" });
  });

  app.delete(`${base}/scripts/:name/secrets/:secret`, async (req) => {
    const p = req.params as Params;
    requireAccount(req, p.account_id, "workers_edit");
    await deployer.changeSecret(p.account_id, p.name, p.secret, undefined);
    return ok(null);
  });
}
