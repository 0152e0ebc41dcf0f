import { isIP } from "node:net";
import type { OptionSpec, OptionValues } from "../core/cli/command.js";
import { UserError } from "../core/errors.js";
import { normalizeHostname } from "./hostnames/names.js";
import type { HostnamePlan } from "./hostnames/plan.js";

/**
 * The edge's part of `edgecli serve` (defaults live only here). The hostname plan's other names are the areas' own
 * options, handed over by the composition root: `--s3-host` (R2), `--workers-domain` (Workers), `--name-servers`
 * (DNS).
 */
export const serveOptions = {
  "api-hostname": {
    type: "strings",
    describe:
      "Host names the v4 API (and, unless --dashboard-hostname is given, the dashboard, the AI gateway's /v1 and S3 path style) is reached by; reserved, with every name under them, from tenants' zones, records, Custom Domains and routes (repeatable; IP addresses always reach the API)",
    default: ["localhost"],
  },
  "dashboard-hostname": {
    type: "string",
    describe:
      "Serve the dashboard (and the v4 API it calls) on this host name only, an origin of its own where no tenant bytes are ever answered (recommended); reserved like --api-hostname. Unset: the dashboard is at /dash/ on the API's host names",
  },
} satisfies Record<string, OptionSpec>;

/** The names other areas own, as their options give them. */
export interface AreaHostnames {
  /** `--s3-host`; "" when host-based S3 addressing is off. */
  s3Host: string;
  /** `--workers-domain` */
  workersDomain: string;
  /** `--name-servers` */
  nameServers: readonly string[];
  /** `--host`, the address the edge port listens on: a name there is an API hostname too. */
  listenHost: string;
}

export interface EdgeConfig {
  plan: HostnamePlan;
}

const HOST_RE = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

function hostname(flag: string, value: string): string {
  const name = normalizeHostname(value);
  if (!HOST_RE.test(name) || isIP(name)) throw new UserError(`${flag} must be a host name (e.g. api.example.net), got "${value}"`);
  return name;
}

export function readEdgeConfig(options: OptionValues<typeof serveOptions>, areas: AreaHostnames): EdgeConfig {
  const api = options["api-hostname"].flatMap((v) => v.split(",")).filter((v) => v.trim() !== "");
  const apiHostnames = api.map((v) => hostname("--api-hostname", v));
  const listen = normalizeHostname(areas.listenHost);
  if (listen !== "" && !isIP(listen) && HOST_RE.test(listen) && !apiHostnames.includes(listen)) apiHostnames.push(listen);
  const dashboard = options["dashboard-hostname"];
  return {
    plan: {
      apiHostnames,
      dashboardHostname: dashboard === undefined || dashboard.trim() === "" ? undefined : hostname("--dashboard-hostname", dashboard),
      s3Host: normalizeHostname(areas.s3Host),
      workersDomain: normalizeHostname(areas.workersDomain),
      nameServers: areas.nameServers.map(normalizeHostname).filter((n) => n !== ""),
    },
  };
}
