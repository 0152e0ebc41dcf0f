import { z } from "zod";
import { bindingName, type BindingType } from "../bindings/binding-type.js";
import { capnpString } from "../runtime/capnp-string.js";

export interface AssetsBinding {
  type: "assets";
  name: string;
}

/**
 * `[assets] binding = "ASSETS"` (wrangler's metadata `{type: "assets", name}`): `env.ASSETS.fetch(request)` answers from
 * the Worker's own static assets, through the binding server, with its html_handling and not_found_handling.
 */
export const assetsBinding: BindingType<AssetsBinding> = {
  type: "assets",
  schema: z.object({ type: z.literal("assets"), name: bindingName() }),
  workerd: (_b, ctx) => `service = ${capnpString(ctx.bindingService("assets", ctx.scriptName))}`,
};
