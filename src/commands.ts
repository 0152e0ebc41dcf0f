import type { AnyCommand, CommandAlias } from "./core/cli/command.js";
import { serveCommand } from "./core/server/serve-command.js";
import { whoamiCommand } from "./core/auth/whoami-command.js";
import * as dns from "./dns/commands.js";
import * as kv from "./kv/commands.js";
import * as r2 from "./r2/commands.js";
import * as workers from "./workers/commands.js";
import * as aiGateway from "./ai-gateway/commands.js";

const areas = [dns, kv, r2, workers, aiGateway];

/** Every CLI command, registered in this one place. */
export const commands: AnyCommand[] = [
  serveCommand(Object.assign({}, ...areas.map((a) => a.serveOptions))),
  whoamiCommand,
  ...areas.flatMap((a) => a.commands),
];

export const aliases: CommandAlias[] = areas.flatMap((a) => a.aliases);

/** What each command group is for, shown in `edgecli <group> --help`. */
export const groups: Record<string, string> = {
  dns: "Manage DNS zones and records served by the platform's authoritative DNS server",
  "dns zone": "Create, list and delete zones",
  "dns record": "Create, list and delete records of a zone",
  kv: "Manage KV namespaces and their keys, remotely or on the local state (--local)",
  "kv namespace": "Create, list and delete KV namespaces",
  "kv key": "Put, get, list and delete single keys",
  "kv bulk": "Put or delete many keys from a JSON file, all or nothing",
  r2: "Manage R2 buckets and objects, and show the S3 credentials of the current token",
  "r2 bucket": "Create, list and delete buckets",
  "r2 object": "Upload, download and delete objects",
  secret: "Manage the secrets of the Worker named in the config",
  "ai-gateway": "Manage AI gateways, their tokens and their logs",
  "ai-gateway token": "Create, list and revoke gateway tokens (API tokens with the AI Gateway Run permission)",
};
