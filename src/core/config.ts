import type { OptionSpec, OptionValues } from "./cli/command.js";

/**
 * Core's part of `edgecli serve`: the options it declares (defaults live only here) and the typed settings read
 * from them. Every area has the same pair in its config.ts; core is the example.
 */
export const serveOptions = {
  host: { type: "string", describe: "Address of the edge HTTP port (API, AI gateway, workers)", default: "127.0.0.1" },
  port: { type: "number", describe: "Edge HTTP port; 0 picks a free one", default: 8787 },
  "state-dir": { type: "string", describe: "Where the platform keeps its state (env EDGE_STATE_DIR; default .edge/)" },
  "log-level": {
    type: "string",
    describe: "Log level",
    choices: ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const,
    default: "info",
  },
  "body-limit": { type: "number", describe: "Largest JSON request body in bytes (routes with raw bodies set their own)", default: 10 * 1024 * 1024 },
  "platform-config": { type: "string", describe: "TOML file whose keys are these option names (default <state-dir>/platform.toml when present)" },
  "seal-object-prototype": {
    type: "boolean",
    describe:
      "Once started, seal Object.prototype (no property can be added to it), so a prototype-pollution bug fails its request instead of changing every object (false turns it off)",
    default: true,
  },
} satisfies Record<string, OptionSpec>;

/** Core's settings, after flags, the platform config file and defaults are merged. */
export interface CoreConfig {
  host: string;
  port: number;
  logLevel: OptionValues<typeof serveOptions>["log-level"];
  /** Largest request body (bytes) a v4 route accepts unless it sets its own limit. */
  bodyLimit: number;
  sealObjectPrototype: boolean;
}

export function readCoreConfig(options: OptionValues<typeof serveOptions>): CoreConfig {
  return {
    host: options.host,
    port: options.port,
    logLevel: options["log-level"],
    bodyLimit: options["body-limit"],
    sealObjectPrototype: options["seal-object-prototype"],
  };
}
