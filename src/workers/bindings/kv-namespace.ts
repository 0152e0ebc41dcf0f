import { z } from "zod";
import { WorkersErrors } from "../errors.js";
import { capnpString } from "../runtime/capnp-string.js";
import { bindingName, type BindingType } from "./binding-type.js";

export interface KvNamespaceBinding {
  type: "kv_namespace";
  name: string;
  namespace_id: string;
}

/** A KV namespace of the account, by id; workerd's KV binding calls go to the KV area through the binding server. */
export const kvNamespace: BindingType<KvNamespaceBinding> = {
  type: "kv_namespace",
  schema: z.object({ type: z.literal("kv_namespace"), name: bindingName(), namespace_id: z.string().min(1) }),
  target: { backend: "kv", resource: (b) => b.namespace_id, missing: (b) => WorkersErrors.namespaceMissing(b.name, b.namespace_id) },
  workerd: (b, ctx) => `kvNamespace = ${capnpString(ctx.bindingService("kv", b.namespace_id))}`,
};
