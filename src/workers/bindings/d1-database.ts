import { z } from "zod";
import { WorkersErrors } from "../errors.js";
import { capnpString } from "../runtime/capnp-string.js";
import { bindingName, type BindingType } from "./binding-type.js";

export interface D1DatabaseBinding {
  type: "d1";
  name: string;
  /** The database's uuid (wrangler 3 sends `id`; the hosted settings API also shows `database_id`). */
  id: string;
}

/**
 * A D1 database of the account, by uuid. workerd ships D1's JavaScript API (`prepare`, `batch`, `exec`,
 * `withSession`) as a wrapped binding, `cloudflare-internal:d1-api`, around one inner binding, `fetcher`: that
 * fetcher is a binding service whose calls go to the D1 area through the binding server (as Miniflare 3 wires it).
 */
export const d1Database: BindingType<D1DatabaseBinding> = {
  type: "d1",
  schema: z.preprocess(
    (b) => (typeof b === "object" && b !== null && !("id" in b) && "database_id" in b ? { ...b, id: (b as { database_id: unknown }).database_id } : b),
    z.object({ type: z.literal("d1"), name: bindingName(), id: z.string().min(1) }),
  ) as z.ZodType<D1DatabaseBinding>,
  target: { backend: "d1", resource: (b) => b.id, missing: (b) => WorkersErrors.databaseMissing(b.name, b.id) },
  workerd: (b, ctx) =>
    `wrapped = (moduleName = "cloudflare-internal:d1-api", innerBindings = [(name = "fetcher", service = ${capnpString(ctx.bindingService("d1", b.id))})])`,
};
