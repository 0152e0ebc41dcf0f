import type { ProjectConfig } from "../../core/cli/config-file.js";
import { UserError } from "../../core/errors.js";
import { effectiveKeys } from "../cli/config-sections.js";

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A service binding as wrangler 3 uploads it; the API refuses what this platform does not have (entrypoint, environment). */
export interface UploadServiceBinding {
  type: "service";
  name: string;
  service: string;
  entrypoint?: string;
  environment?: string;
}

/** The config's `[[services]]` (`binding`, `service`, optional `entrypoint` and `environment`) as upload bindings. */
export function serviceBindings(cfg: ProjectConfig): UploadServiceBinding[] {
  const list = effectiveKeys(cfg).get("services")?.value;
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new UserError(`${cfg.path}: "services" must be a list of tables ([[services]] binding = "…" service = "…")`);
  return list.map((s: unknown, i) => {
    if (!isTable(s) || typeof s.binding !== "string" || typeof s.service !== "string") {
      throw new UserError(`${cfg.path}: services[${i}] needs a "binding" and a "service" (strings)`);
    }
    const extra = Object.keys(s).find((k) => !["binding", "service", "entrypoint", "environment"].includes(k));
    if (extra) throw new UserError(`${cfg.path}: services[${i}]: "${extra}" is not a key of a service binding`);
    for (const k of ["entrypoint", "environment"] as const) {
      if (s[k] !== undefined && typeof s[k] !== "string") throw new UserError(`${cfg.path}: services[${i}]: "${k}" must be a string`);
    }
    return {
      type: "service",
      name: s.binding,
      service: s.service,
      ...(typeof s.entrypoint === "string" && { entrypoint: s.entrypoint }),
      ...(typeof s.environment === "string" && { environment: s.environment }),
    };
  });
}
