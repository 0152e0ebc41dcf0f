import { z } from "zod";
import { WorkersErrors } from "../errors.js";
import { bindingName } from "./binding-type.js";
import type { Binding } from "./registry.js";

/**
 * The `inherit` binding of an upload (`{"type": "inherit", "name": "Q"}`): "bind what the Worker's earlier version bound
 * under this name". wrangler 4 sends it on every redeploy for a KV, D1, R2 or Queue binding the Worker already has, and
 * for each secret `secrets.required` names. `old_name` renames the binding; `version_id` names the version to take it
 * from (a version id, or "latest", the default: the newest version, deployed or not).
 */
export const inheritBindingSchema = z.object({
  type: z.literal("inherit"),
  name: bindingName(),
  old_name: bindingName().optional(),
  version_id: z.string().min(1).max(64).optional(),
});

export type InheritBinding = z.infer<typeof inheritBindingSchema>;

/** The version an inherit binding takes its binding from: its bindings, and the secrets the Worker has now. */
export interface InheritSource {
  bindings: readonly Binding[];
  /** Secrets are the Worker's here, not a version's: inheriting one keeps it as it is. */
  secretNames: readonly string[];
}

/**
 * Replaces the inherit bindings of an upload with the bindings they name in `sourceOf(versionId)` (undefined when there
 * is no such version, or no Worker yet). One that names nothing is refused with `strict` (`?bindings_inherit=strict`,
 * what wrangler sends) and dropped without it, as hosted. An inherited secret adds no binding: the Worker keeps it.
 */
export async function resolveInherits(
  inherits: readonly InheritBinding[],
  sourceOf: (versionId: string | undefined) => Promise<InheritSource | undefined>,
  strict: boolean,
): Promise<Binding[]> {
  const resolved: Binding[] = [];
  for (const inherit of inherits) {
    const versionId = inherit.version_id === "latest" ? undefined : inherit.version_id;
    const source = await sourceOf(versionId);
    const from = inherit.old_name ?? inherit.name;
    const binding = source?.bindings.find((b) => b.name === from);
    if (binding) {
      resolved.push({ ...binding, name: inherit.name });
      continue;
    }
    if (source?.secretNames.includes(from)) {
      if (from !== inherit.name) throw WorkersErrors.inheritedSecretRenamed(inherit.name, from);
      continue;
    }
    if (!strict) continue;
    const why = !source
      ? versionId
        ? `this Worker has no version ${versionId}`
        : "this Worker has no earlier version to inherit it from"
      : `the version it inherits from has no binding named ${from}`;
    throw WorkersErrors.inheritUnresolved(inherit.name, why);
  }
  return resolved;
}
