import type { FastifyInstance } from "fastify";
import { WorkersErrors } from "../errors.js";
import type { WorkersStore } from "../store.js";
import { MODULE_CONTENT_TYPES } from "./upload.js";

type Params = { account_id: string; name: string };

/**
 * `GET /accounts/{a}/workers/scripts/{name}/content/v2`: a Worker's code without its metadata, as the hosted API
 * answers it. Terraform's provider reads it on every refresh and compares it with the `content` it uploaded: a
 * one-module Worker is answered as the module's bytes with its content type; a Worker of several modules as
 * multipart/form-data, its main module first (the part the provider reads).
 */
export function registerContentRoutes(app: FastifyInstance, store: WorkersStore): void {
  app.get("/accounts/:account_id/workers/scripts/:name/content/v2", { config: { permission: "workers_read" } }, async (req, reply) => {
    const p = req.params as Params;
    const s = await store.get(p.account_id, p.name);
    if (!s) throw WorkersErrors.scriptNotFound();
    const main = s.modules.filter((m) => m.name === s.mainModule);
    const modules = await store.readModules([...main, ...s.modules.filter((m) => m.name !== s.mainModule)]);
    if (modules.length === 1) return reply.type(MODULE_CONTENT_TYPES[modules[0].kind]).send(modules[0].content);
    const form = new FormData();
    for (const m of modules) form.append(m.name, new Blob([m.content], { type: MODULE_CONTENT_TYPES[m.kind] }), m.name);
    const res = new Response(form);
    return reply.header("content-type", res.headers.get("content-type")!).send(Buffer.from(await res.arrayBuffer()));
  });
}
