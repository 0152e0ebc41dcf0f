import { z } from "zod";
import { bindingName, type BindingType } from "../bindings/binding-type.js";
import { capnpString } from "../runtime/capnp-string.js";

export interface DurableObjectNamespaceBinding {
  type: "durable_object_namespace";
  name: string;
  class_name: string;
  /** The Worker that exports the class: only the script itself is accepted (checked at upload, durable-objects.ts). */
  script_name?: string;
  environment?: string;
}

/**
 * A Durable Object namespace of a class the script exports, created by a migration (checked at upload against the
 * script's namespaces); workerd runs the objects itself, in the script's own process.
 */
export const durableObjectNamespace: BindingType<DurableObjectNamespaceBinding> = {
  type: "durable_object_namespace",
  schema: z.object({
    type: z.literal("durable_object_namespace"),
    name: bindingName(),
    class_name: z.string().min(1).max(256),
    script_name: z.string().min(1).optional(),
    environment: z.string().min(1).optional(),
  }),
  workerd: (b) => `durableObjectNamespace = (className = ${capnpString(b.class_name)})`,
};
