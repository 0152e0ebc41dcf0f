import { fileURLToPath } from "node:url";
import type { OptionSpec, OptionValues } from "../core/cli/command.js";

/** The AI gateway's part of `edgecli serve` (defaults live only here). */
export const serveOptions = {
  "provider-base-url": {
    type: "strings",
    describe: "Upstream base URL of an AI gateway provider, as <provider>=<url> (repeatable), e.g. openai=http://127.0.0.1:11434/v1",
  },
  "ai-gateway-prices": {
    type: "string",
    describe:
      'JSON file of model prices (USD per million tokens) that override or extend the shipped table: {"models": {"<model>": {"input": 2.5, "output": 10}}}',
  },
} satisfies Record<string, OptionSpec>;

export interface AiGatewayConfig {
  /** `<provider>=<url>` overrides of providers' upstream base URLs, as given. */
  providerBaseUrls: readonly string[];
  /** The operator's price file, read over the shipped table; undefined when there is none. */
  pricesFile: string | undefined;
}

export function readAiGatewayConfig(options: OptionValues<typeof serveOptions>): AiGatewayConfig {
  return { providerBaseUrls: options["provider-base-url"] ?? [], pricesFile: options["ai-gateway-prices"] };
}

/**
 * The price table shipped in the package (src/ai-gateway/metering/prices.json, copied to dist by the build).
 * Resolved from this folder's parent so that it is found both from dist/ai-gateway/ and from the CLI bundle in
 * dist/bin/.
 */
export const SHIPPED_PRICES_FILE = fileURLToPath(new URL("../ai-gateway/metering/prices.json", import.meta.url));
