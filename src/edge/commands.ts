import { defineCommand, type AnyCommand, type CommandAlias } from "../core/cli/command.js";
import { lazy } from "../core/cli/lazy.js";

import { serveOptions as hostnameOptions } from "./config.js";
import { cacheServeOptions } from "./cache/config.js";
import { certificateServeOptions } from "./certificates/config.js";
import { originServeOptions } from "./origin/config.js";
import { threadsServeOptions } from "./threads/config.js";

const zoneArg = { name: "zone", describe: "The zone, by name (example.com) or id", required: true } as const;

/** The hostname plan's options, the proxy's, the cache's and the HTTPS port's. */
export const serveOptions = { ...hostnameOptions, ...originServeOptions, ...cacheServeOptions, ...certificateServeOptions, ...threadsServeOptions };

/** The edge's commands: purging the cache and a zone's settings (the edge's options belong to `edgecli serve`). */
export const groups: Record<string, string> = {
  cache: "Purge the edge's cache of proxied traffic (every node)",
  settings: "Show and change a zone's settings: SSL mode to the origin, Always Use HTTPS, development mode, cache level, … (docs/proxy.md)",
};
export const commands: AnyCommand[] = [
  defineCommand({
    path: ["cache", "purge"],
    describe: "Purge cached objects of a zone: by URL, Cache-Tag, host, URL prefix, or everything (at most 100 items at once)",
    positionals: [zoneArg] as const,
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
  defineCommand({
    path: ["settings", "get"],
    describe: "Show a zone's settings as JSON, or one setting's value alone",
    positionals: [zoneArg, { name: "setting", describe: "A setting's id (ssl, always_use_https, development_mode, …); none: every setting" }] as const,
    examples: ["edgecli settings get example.com", "edgecli settings get example.com ssl"],
    handler: lazy(() => import("./settings/cli/settings.js"), "getSettings"),
  }),
  defineCommand({
    path: ["settings", "set"],
    describe: "Change one setting of a zone (the v4 API's PATCH /zones/{id}/settings/{setting})",
    positionals: [
      zoneArg,
      {
        name: "setting",
        describe:
          "The setting's id: always_use_https, browser_cache_ttl, cache_level, development_mode, http2, ipv6, min_tls_version, ssl, tls_1_3, websockets",
        required: true,
      },
      {
        name: "value",
        describe: "Its new value: on/off, a mode (ssl: off, flexible, full, strict), a TLS version (1.2) or seconds (browser_cache_ttl)",
        required: true,
      },
    ] as const,
    examples: [
      "edgecli settings set example.com always_use_https on",
      "edgecli settings set example.com ssl full",
      "edgecli settings set example.com browser_cache_ttl 3600",
    ],
    handler: lazy(() => import("./settings/cli/settings.js"), "setSetting"),
  }),
];
export const aliases: CommandAlias[] = [];
