import type { IncomingMessage } from "node:http";
import { scriptOfHost } from "../runtime/proxy.js";
import type { WorkersRuntime } from "../runtime/runtime.js";
import type { RouteTable } from "./table.js";

/**
 * The Worker an edge request is for: `<name>.<workers domain>` unless that URL is turned off, else the route or
 * Custom Domain its Host and path match (names are unique; the account is checked too).
 */
export function edgeScriptResolver(workersDomain: string, routes: RouteTable, runtime: WorkersRuntime): (req: IncomingMessage) => string | undefined {
  return (req) => {
    const name = scriptOfHost(req.headers.host, workersDomain);
    if (name !== undefined) return routes.atWorkersDomain(name) ? name : undefined;
    const target = routes.match(req.headers.host, req.url ?? "/");
    if (!target?.script) return undefined;
    const rt = runtime.lookup(target.script);
    return rt && rt.accountId !== target.accountId ? undefined : target.script;
  };
}
