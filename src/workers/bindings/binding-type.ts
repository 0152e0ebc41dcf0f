import { z } from "zod";
import { bindingNameProblem } from "../../core/cli/config-file.js";
import type { EdgeError } from "../../core/errors.js";

/**
 * What a binding type is: everything the platform knows about one kind of binding (its upload metadata, the
 * resource it needs in the account, its workerd config) lives in one file of this folder, listed in registry.ts.
 */

/** What workerd's config offers a binding type. */
export interface WorkerdBindingContext {
  /**
   * A service of the script's workerd config that sends its calls to the binding server, marked (by a header
   * workerd injects) as calls for `resource` of `backend` in the script's account; returns the service's name.
   * With `rpc`, workerd also opens Cap'n Proto RPC sessions to it (a CONNECT to a host naming the same resource).
   */
  bindingService(backend: BindingBackendName, resource: string, opts?: { rpc?: boolean }): string;
  /** The name of the Worker the config runs. */
  scriptName: string;
}

/**
 * The areas that serve binding calls through the binding server (see service.ts for which handles what); "tail" is
 * the tail worker's posts of a script's events (tail/tail-worker.ts); "outbound" a script's own fetch() calls
 * (runtime/outbound.ts); "cache" its Cache API calls (caches.default, caches.open: workerd's cacheApiOutbound).
 */
export type BindingBackendName = "r2" | "kv" | "d1" | "queues" | "service" | "assets" | "tail" | "outbound" | "cache";

export interface BindingType<B extends { type: string; name: string }> {
  readonly type: B["type"];
  /** One binding of this type in the upload's metadata (unknown fields are dropped). */
  readonly schema: z.ZodType<B>;
  /** The resource of a backend the binding uses: it must exist in the script's account when the script is uploaded. */
  readonly target?: {
    backend: BindingBackendName;
    resource(binding: B): string;
    /** The refusal when it does not exist. */
    missing(binding: B): EdgeError;
  };
  /** The binding's value in workerd's config, what follows `name = "...", ` (e.g. `text = "..."`). */
  workerd(binding: B, ctx: WorkerdBindingContext): string;
}

/** A binding's (or secret's) name; the message says why one is refused. */
export const bindingName = () =>
  z.string().superRefine((name, ctx) => {
    const problem = bindingNameProblem(name);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
