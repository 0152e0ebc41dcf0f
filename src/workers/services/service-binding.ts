import { z } from "zod";
import { bindingName, type BindingType } from "../bindings/binding-type.js";
import { capnpString } from "../runtime/capnp-string.js";
import { ServiceBindingErrors } from "./errors.js";

export interface ServiceBinding {
  type: "service";
  name: string;
  /** The bound Worker's name, in the same account. */
  service: string;
}

/**
 * A service binding (`[[services]]`, wrangler's metadata `{type: "service", name, service}`): `env.X.fetch()` and the
 * RPC methods of the bound Worker's default export. The bound Worker runs in its own workerd process, so the binding
 * is an external service on the binding server, which passes fetch calls to that Worker's live process and tunnels
 * workerd's own Cap'n Proto RPC sessions (CONNECT to the `capnpConnectHost`) to its "rpc" socket (see gate.ts).
 */
export const serviceBinding: BindingType<ServiceBinding> = {
  type: "service",
  schema: z
    .object({
      type: z.literal("service"),
      name: bindingName(),
      service: z.string().min(1),
      entrypoint: z.string().optional(),
      environment: z.string().optional(),
    })
    .transform((b, ctx) => {
      const refusal =
        b.entrypoint !== undefined && b.entrypoint !== "default"
          ? ServiceBindingErrors.entrypoint(b.name, b.entrypoint)
          : b.environment !== undefined && b.environment !== ""
            ? ServiceBindingErrors.environment(b.name)
            : undefined;
      if (refusal) {
        ctx.addIssue({ code: "custom", message: refusal.message });
        return z.NEVER;
      }
      return { type: b.type, name: b.name, service: b.service };
    }) as unknown as z.ZodType<ServiceBinding>,
  target: { backend: "service", resource: (b) => b.service, missing: (b) => ServiceBindingErrors.missing(b.name, b.service) },
  workerd: (b, ctx) => `service = ${capnpString(ctx.bindingService("service", b.service, { rpc: true }))}`,
};
