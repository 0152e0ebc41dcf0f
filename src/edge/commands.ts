import { defineCommand, type AnyCommand, type CommandAlias } from "../core/cli/command.js";
import { lazy } from "../core/cli/lazy.js";

import { serveOptions as hostnameOptions } from "./config.js";
import { cacheServeOptions } from "./cache/config.js";
import { certificateServeOptions } from "./certificates/config.js";
import { originServeOptions } from "./origin/config.js";

/** The hostname plan's options, the proxy's, the cache's and the HTTPS port's. */
export const serveOptions = { ...hostnameOptions, ...originServeOptions, ...cacheServeOptions, ...certificateServeOptions };

/** The edge's commands: purging the cache (its options belong to `edgecli serve`; zone settings are an API). */
export const groups: Record<string, string> = {
  cache: "Purge the edge's cache of proxied traffic (every node)",
};
export const commands: AnyCommand[] = [
  defineCommand({
    path: ["cache", "purge"],
    describe: "Purge cached objects of a zone: by URL, Cache-Tag, host, URL prefix, or everything (at most 100 items at once)",
    positionals: [{ name: "zone", describe: "The zone, by name (example.com) or id", required: true }] as const,
    options: {
      file: { type: "strings", describe: "A URL to purge, as cached (repeatable or comma-separated)" },
      tag: { type: "strings", describe: "A Cache-Tag the origin sent (repeatable or comma-separated)" },
      host: { type: "strings", describe: "A host name whose objects all go (repeatable or comma-separated)" },
      prefix: { type: "strings", describe: 'A URL prefix without scheme, as "www.example.com/images/" (repeatable or comma-separated)' },
      everything: { type: "boolean", describe: "Purge everything cached for the zone" },
    },
    examples: [
      "edgecli cache purge example.com --file https://www.example.com/app.js",
      "edgecli cache purge example.com --tag product-1234,homepage",
      "edgecli cache purge example.com --everything",
    ],
    handler: lazy(() => import("./cache/cli/purge.js"), "purge"),
  }),
];
export const aliases: CommandAlias[] = [];
