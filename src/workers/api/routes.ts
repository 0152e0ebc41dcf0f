import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { ok } from "../../core/http/envelope.js";
import { parseWith } from "../../core/http/validate.js";
import { bindingName } from "../bindings/binding-type.js";
import type { ScriptDeployer } from "../deployer.js";
import { WorkersCodes, WorkersErrors, WorkersMessages } from "../errors.js";
import {
  MAX_DEPLOYMENT_VERSIONS,
  VersionLimits,
  type ChangeAuthor,
  type DeploymentRecord,
  type ScriptRecord,
  type VersionRecord,
  type WorkersStore,
} from "../store.js";
import { registerContentRoutes } from "./content.js";
import { registerScheduleRoutes } from "./schedules.js";
import type { ObservabilitySetting } from "../logs/settings.js";
import { checkScriptSettings, checkSubdomainChange, SCRIPT_SETTINGS, subdomainState } from "./settings.js";
import { multipartLabelledAsJavascript } from "./sdk-content-type.js";
import { MODULE_CONTENT_TYPES, readUpload, secretText, type ParsedUpload } from "./upload.js";

export interface WorkersRouteDeps {
  store: WorkersStore;
  deployer: ScriptDeployer;
  /** The URL a script is served at, e.g. http://name.workers.localhost:8787 */
  urlOf(name: string): string;
  /** The newest compatibility date the running workerd implements. */
  newestCompatibilityDate(): string | undefined;
  /** What a running version of a script handles (its default export's handlers): the primary one's unless `versionId` names one. */
  handlersOf(name: string, versionId?: string): readonly string[];
  workersDomain: string;
  /** Called after a script's cron triggers changed or it was deleted, so the clock reads them again. */
  triggersChanged(): Promise<void>;
  /** Whether a script is served at `<name>.<workers domain>`, and turning that on or off (routing/table.ts). */
  workersDev: { enabled(name: string): boolean; set(accountId: string, name: string, enabled: boolean): Promise<void> };
  /** The last Durable Object migration applied to a script (wrangler reads it to send only the later ones). */
  migrationTag(accountId: string, name: string): Promise<string | undefined>;
  /** A Worker's `observability` setting (Workers Logs, logs/logs.ts). */
  observability: {
    get(accountId: string, name: string): Promise<ObservabilitySetting>;
    set(accountId: string, name: string, setting: ObservabilitySetting): Promise<void>;
  };
}

type Params = { account_id: string; name: string; secret: string; version_id: string };

const read = { config: { permission: "workers_read" } } as const;
const edit = { config: { permission: "workers_edit" } } as const;

const secretSchema = z.object({
  name: bindingName(),
  text: secretText(),
  type: z.literal("secret_text").default("secret_text"),
});

const deploymentSchema = z.object({
  strategy: z.literal("percentage").default("percentage"),
  versions: z
    .array(z.object({ version_id: z.string().max(64), percentage: z.number().min(0).max(100) }))
    .min(1)
    // Bounds the body; more than MAX_DEPLOYMENT_VERSIONS is refused with its own message below.
    .max(16),
  // wrangler sends `"workers/message": undefined` as no key; the rollback prompt allows 120 characters.
  annotations: z.looseObject({ "workers/message": z.string().max(1000).optional() }).optional(),
});

const versionPageSchema = z.object({
  page: z.coerce.number().int().min(1).default(1),
  // 10 is what `wrangler versions list` shows ("the 10 most recent"); every kept version fits in the largest page.
  per_page: z.coerce.number().int().min(1).max(VersionLimits.versions).default(10),
  // Every kept version can be deployed here, so `?deployable=true` lists the same versions.
  deployable: z.enum(["true", "false"]).optional(),
});

/** wrangler's own tolerance for percentages that add up to 100 (33.333% and 66.667%, say). */
const PERCENTAGE_EPSILON = 1e-3;

/** One version, or two with shares of the traffic: each named once, the percentages adding up to 100 (0% is allowed). */
function checkDeploymentVersions(versions: readonly { version_id: string; percentage: number }[]): void {
  if (versions.length > MAX_DEPLOYMENT_VERSIONS) throw WorkersErrors.tooManyDeploymentVersions(MAX_DEPLOYMENT_VERSIONS, versions.length);
  const seen = new Set<string>();
  for (const v of versions) {
    if (seen.has(v.version_id)) throw WorkersErrors.deploymentVersionTwice(v.version_id);
    seen.add(v.version_id);
  }
  const sum = versions.reduce((total, v) => total + v.percentage, 0);
  if (Math.abs(sum - 100) > PERCENTAGE_EPSILON) throw WorkersErrors.deploymentPercentages(sum);
}

const deployQuerySchema = z.object({ force: z.enum(["true", "false"]).optional() });

/** Who makes a change: the caller's email, and whether wrangler made the call (its User-Agent is `wrangler/<version>`). */
const authorOf = (req: FastifyRequest): ChangeAuthor => ({
  source: /^wrangler\//.test(req.headers["user-agent"] ?? "") ? "wrangler" : "api",
  author: req.principal.email,
});
const uploadMeta = (req: FastifyRequest, up: ParsedUpload) => ({
  ...authorOf(req),
  triggeredBy: "upload" as const,
  ...(up.message !== undefined && { message: up.message }),
  ...(up.tag !== undefined && { tag: up.tag }),
});

export function registerWorkersRoutes(app: FastifyInstance, deps: WorkersRouteDeps): void {
  const { store, deployer } = deps;
  const base = "/accounts/:account_id/workers";
  registerScheduleRoutes(app, { store, triggersChanged: deps.triggersChanged });
  registerContentRoutes(app, store);

  /** The script the path names in the path's account, or its 404. */
  const scriptOf = async (req: FastifyRequest, notFound: (name: string) => Error = WorkersErrors.scriptNotFound) => {
    const p = req.params as Params;
    const s = await store.get(p.account_id, p.name);
    if (!s) throw notFound(p.name);
    return s;
  };

  /** The script as the hosted API summarises it. */
  const summary = (s: ScriptRecord) => ({
    id: s.name,
    etag: s.etag,
    handlers: deps.handlersOf(s.name),
    has_modules: true,
    compatibility_date: s.compatibilityDate,
    compatibility_flags: s.compatibilityFlags,
    usage_model: "standard",
    created_on: s.createdOn,
    modified_on: s.modifiedOn,
  });

  /** `migration_tag`, as the hosted API shows it, for a script with Durable Object migrations. */
  const migrationTagOf = async (s: ScriptRecord) => {
    const tag = await deps.migrationTag(s.accountId, s.name);
    return tag === undefined ? {} : { migration_tag: tag };
  };

  /** Bindings as settings show them: secrets by name and type only. */
  const bindingsOf = async (s: ScriptRecord) => [
    ...s.bindings,
    ...(await store.secretNames(s.accountId, s.name)).map((name) => ({ name, type: "secret_text" })),
  ];

  /** Said on upload when workerd is older than the script's compatibility date (wrangler's local mode warns alike). */
  const dateMessages = (s: ScriptRecord) => {
    const newest = deps.newestCompatibilityDate();
    return !newest || s.compatibilityDate <= newest ? [] : [WorkersMessages.compatibilityDateLowered(s.compatibilityDate, newest)];
  };

  const sdkUpload = {
    ...edit,
    preParsing: async (req: FastifyRequest, _reply: unknown, payload: NodeJS.ReadableStream) => {
      await multipartLabelledAsJavascript(req);
      return payload;
    },
  };
  app.put(`${base}/scripts/:name`, sdkUpload, async (req) => {
    const p = req.params as Params;
    const up = await readUpload(req);
    const s = await deployer.upload(p.account_id, p.name, up, uploadMeta(req, up));
    if (up.observability !== undefined) await deps.observability.set(p.account_id, p.name, up.observability);
    return ok({ ...summary(s), deployment_id: s.versionId, startup_time_ms: 0, url: deps.urlOf(s.name) }, undefined, dateMessages(s));
  });

  // Versions and deployments (`wrangler versions …`, `wrangler deployments …`, `wrangler rollback`): the last
  // VersionLimits.versions versions of a Worker are kept; a deployment makes one of them live at 100%, or two with
  // shares of the traffic (a gradual deployment).
  const versionView = (v: VersionRecord) => ({
    id: v.id,
    number: v.number,
    metadata: {
      created_on: v.createdOn,
      modified_on: v.createdOn,
      source: v.source,
      has_preview: false,
      ...(v.author !== undefined && { author_email: v.author }),
    },
    annotations: {
      "workers/triggered_by": v.triggeredBy,
      ...(v.message !== undefined && { "workers/message": v.message }),
      ...(v.tag !== undefined && { "workers/tag": v.tag }),
    },
    resources: {
      // What a version handles is known once it ran: those running (the two of a gradual deployment).
      script: { etag: v.etag, handlers: deps.handlersOf(v.script, v.id) },
      script_runtime: { compatibility_date: v.compatibilityDate, compatibility_flags: v.compatibilityFlags, usage_model: "standard" },
      bindings: [...v.bindings, ...v.secretNames.map((name) => ({ name, type: "secret_text" }))],
    },
    startup_time_ms: 0,
  });
  const deploymentView = (d: DeploymentRecord) => ({
    id: d.id,
    source: d.source,
    strategy: "percentage",
    ...(d.author !== undefined && { author_email: d.author }),
    created_on: d.createdOn,
    annotations: {
      ...(d.triggeredBy !== undefined && { "workers/triggered_by": d.triggeredBy }),
      ...(d.message !== undefined && { "workers/message": d.message }),
    },
    versions: d.versions.map((v) => ({ version_id: v.versionId, percentage: v.percentage })),
  });

  app.post(`${base}/scripts/:name/versions`, edit, async (req) => {
    const p = req.params as Params;
    const up = await readUpload(req);
    const existed = (await store.get(p.account_id, p.name)) !== undefined;
    const { version, deployed } = await deployer.uploadVersion(p.account_id, p.name, up, uploadMeta(req, up));
    // The setting is the Worker's, not a version's: a version upload that carries one sets it, as a deploy does.
    if (up.observability !== undefined) await deps.observability.set(p.account_id, p.name, up.observability);
    const live = (await store.get(p.account_id, p.name))!;
    const why = existed ? "this Worker has static assets, and keeps one version here" : "it is the Worker's first version";
    const messages = [...dateMessages(live), ...(deployed ? [WorkersMessages.deployedAtOnce(why)] : [])];
    return ok(versionView(version), undefined, messages);
  });
  app.get(`${base}/scripts/:name/versions`, read, async (req) => {
    const s = await scriptOf(req);
    const q = parseWith(versionPageSchema, req.query ?? {}, WorkersCodes.validation);
    const { items, total } = await store.versions(s.accountId, s.name, q.page, q.per_page);
    return ok(
      { items: items.map(versionView) },
      { page: q.page, per_page: q.per_page, count: items.length, total_count: total, total_pages: Math.ceil(total / q.per_page) },
    );
  });
  app.get(`${base}/scripts/:name/versions/:version_id`, read, async (req) => {
    const s = await scriptOf(req);
    const { version_id } = req.params as Params;
    const v = await store.version(s.accountId, s.name, version_id);
    if (!v) throw WorkersErrors.versionNotFound(version_id);
    return ok(versionView(v));
  });
  app.get(`${base}/scripts/:name/deployments`, read, async (req) => {
    const s = await scriptOf(req);
    return ok({ deployments: (await store.deployments(s.accountId, s.name)).map(deploymentView) });
  });
  app.post(`${base}/scripts/:name/deployments`, edit, async (req) => {
    const s = await scriptOf(req);
    const body = parseWith(deploymentSchema, req.body ?? {}, WorkersCodes.validation);
    const { force } = parseWith(deployQuerySchema, req.query ?? {}, WorkersCodes.validation);
    checkDeploymentVersions(body.versions);
    const message = body.annotations?.["workers/message"];
    const deployment: DeploymentRecord = {
      id: randomUUID(),
      createdOn: new Date().toISOString(),
      ...authorOf(req),
      ...(message !== undefined && { message }),
      versions: body.versions.map((v) => ({ versionId: v.version_id, percentage: v.percentage })),
    };
    await deployer.deployVersion(s.accountId, s.name, deployment, force === "true");
    return ok(deploymentView(deployment));
  });
  // Tags are kept (wrangler 4 groups a Worker's environments by `cf:service=` and `cf:environment=` tags); the other
  // settings are features this platform does not have, accepted off only (settings.ts).
  const scriptSettingsOf = async (s: ScriptRecord) => ({
    ...SCRIPT_SETTINGS,
    observability: await deps.observability.get(s.accountId, s.name),
    tags: await store.tags(s.accountId, s.name),
  });
  app.get(`${base}/scripts/:name/script-settings`, read, async (req) => ok(await scriptSettingsOf(await scriptOf(req))));
  app.patch(`${base}/scripts/:name/script-settings`, edit, async (req) => {
    const s = await scriptOf(req);
    const { tags, observability } = checkScriptSettings(req.body ?? {});
    if (tags !== undefined) await store.setTags(s.accountId, s.name, tags);
    if (observability !== undefined) await deps.observability.set(s.accountId, s.name, observability);
    return ok(await scriptSettingsOf(s));
  });

  // What depends on a Worker (`wrangler delete` asks before deleting one that is used): the Workers of the same account
  // whose service bindings name it. Durable Object namespaces are bound by their own Worker only here, and there are no
  // Pages Functions or dispatch namespaces, so those lists are empty.
  app.get(`${base}/scripts/:name/references`, read, async (req) => {
    const s = await scriptOf(req);
    const incoming = (await store.list(s.accountId))
      .filter((other) => other.name !== s.name && other.bindings.some((b) => b.type === "service" && b.service === s.name))
      .map((other) => ({ service: other.name, environment: "production" }));
    const outgoing = s.bindings.flatMap((b) => (b.type === "service" ? [{ service: b.service, environment: "production" }] : []));
    return ok({ services: { incoming, outgoing, pages_function: false }, durable_objects: [], dispatch_outbounds: [] });
  });
  // The Tail Workers a Worker is a consumer of: there are no Tail Workers here (tail_consumers is only ever []).
  app.get(`${base}/tails/by-consumer/:name`, read, async (req) => {
    await scriptOf(req);
    return ok([]);
  });

  app.get(`${base}/scripts`, read, async (req) => {
    const p = req.params as Params;
    const scripts = await store.list(p.account_id);
    return ok(await Promise.all(scripts.map(async (s) => ({ ...summary(s), ...(await migrationTagOf(s)) }))));
  });

  // The hosted API answers with the modules as multipart/form-data, one part per module.
  app.get(`${base}/scripts/:name`, read, async (req, reply) => {
    const s = await scriptOf(req);
    const form = new FormData();
    for (const m of await store.readModules(s.modules)) form.append(m.name, new Blob([m.content], { type: MODULE_CONTENT_TYPES[m.kind] }), m.name);
    const res = new Response(form);
    return reply.header("content-type", res.headers.get("content-type")!).send(Buffer.from(await res.arrayBuffer()));
  });

  // `wrangler delete` removes the service; here a service is its one script.
  for (const path of [`${base}/scripts/:name`, `${base}/services/:name`]) {
    app.delete(path, edit, async (req) => {
      const p = req.params as Params;
      await deployer.remove(p.account_id, p.name);
      await deps.triggersChanged();
      return ok({ id: p.name });
    });
  }

  app.get(`${base}/scripts/:name/settings`, read, async (req) => {
    const s = await scriptOf(req);
    return ok({
      bindings: await bindingsOf(s),
      compatibility_date: s.compatibilityDate,
      compatibility_flags: s.compatibilityFlags,
      logpush: SCRIPT_SETTINGS.logpush,
      placement: {},
      tail_consumers: SCRIPT_SETTINGS.tail_consumers,
      usage_model: "standard",
    });
  });

  app.get(`${base}/services/:name`, read, async (req) => {
    const s = await scriptOf(req, WorkersErrors.serviceNotFound);
    return ok({
      id: s.name,
      default_environment: {
        environment: "production",
        created_on: s.createdOn,
        modified_on: s.modifiedOn,
        script: {
          ...summary(s),
          ...(await migrationTagOf(s)),
          tags: await store.tags(s.accountId, s.name),
          // wrangler 4 warns before overwriting a Worker last changed through the API ("api"); "dash" would make it
          // diff the dashboard's configuration, and nothing here edits a Worker in a dashboard.
          last_deployed_from: (await store.deployments(s.accountId, s.name))[0]?.source ?? "api",
        },
      },
      created_on: s.createdOn,
      modified_on: s.modifiedOn,
    });
  });

  app.get(`${base}/workers/:name`, read, async (req) => {
    const s = await scriptOf(req);
    return ok({
      id: s.name,
      name: s.name,
      subdomain: subdomainState(deps.workersDev.enabled(s.name)),
      created_on: s.createdOn,
      updated_on: s.modifiedOn,
      url: deps.urlOf(s.name),
    });
  });

  // A script is served at <name>.<workers domain> (set by --workers-domain) unless turned off here, and at its routes.
  app.get(`${base}/scripts/:name/subdomain`, read, async (req) => {
    const s = await scriptOf(req);
    return ok(subdomainState(deps.workersDev.enabled(s.name)));
  });
  app.post(`${base}/scripts/:name/subdomain`, edit, async (req) => {
    const s = await scriptOf(req);
    const change = checkSubdomainChange(req.body ?? {});
    if (change.enabled !== undefined) await deps.workersDev.set(s.accountId, s.name, change.enabled);
    return ok(subdomainState(deps.workersDev.enabled(s.name)), undefined, change.messages);
  });
  app.get(`${base}/subdomain`, read, async () => ok({ subdomain: deps.workersDomain }));
  app.put(`${base}/subdomain`, edit, async () => {
    throw WorkersErrors.workersDomainFixed(deps.workersDomain);
  });

  app.get(`${base}/scripts/:name/secrets`, read, async (req) => {
    const s = await scriptOf(req);
    return ok((await store.secretNames(s.accountId, s.name)).map((name) => ({ name, type: "secret_text" })));
  });

  app.get(`${base}/scripts/:name/secrets/:secret`, read, async (req) => {
    const s = await scriptOf(req);
    const { secret } = req.params as Params;
    if (!(await store.secretNames(s.accountId, s.name)).includes(secret)) throw WorkersErrors.secretNotFound(secret);
    return ok({ name: secret, type: "secret_text" });
  });

  app.put(`${base}/scripts/:name/secrets`, edit, async (req) => {
    const p = req.params as Params;
    const body = parseWith(secretSchema, req.body ?? {}, WorkersCodes.validation);
    await deployer.changeSecret(p.account_id, p.name, body.name, body.text, authorOf(req));
    return ok({ name: body.name, type: "secret_text" });
  });

  app.delete(`${base}/scripts/:name/secrets/:secret`, edit, async (req) => {
    const p = req.params as Params;
    await deployer.changeSecret(p.account_id, p.name, p.secret, undefined, authorOf(req));
    return ok(null);
  });
}
