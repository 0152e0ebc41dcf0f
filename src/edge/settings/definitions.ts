import { EdgeErrors } from "../errors.js";

/** A setting's value as the API carries it: the hosted settings here are strings ("on"/"off", a mode) or a number. */
export type SettingValue = string | number;

interface SettingSpec {
  /** The value of a zone that never set it. */
  readonly default: SettingValue;
  /** The value as stored, or a refusal naming what it takes. */
  parse(value: unknown): SettingValue;
}

const oneOf = (id: string, values: readonly string[]) => (value: unknown) => {
  if (typeof value === "string" && values.includes(value)) return value;
  throw EdgeErrors.invalidValue(id, `it takes one of ${values.map((v) => `"${v}"`).join(", ")}`);
};
const onOff = (id: string) => oneOf(id, ["on", "off"]);

/** The hosted platform's Browser Cache TTL choices, in seconds (0: respect the origin's headers). */
const BROWSER_CACHE_TTLS = [
  0, 30, 60, 120, 300, 1200, 1800, 3600, 7200, 10800, 14400, 18000, 28800, 43200, 57600, 72000, 86400, 172800, 259200, 345600, 432000, 691200, 1382400, 2073600,
  2678400, 5356800, 16070400, 31536000,
];

/**
 * Development mode ends by itself three hours after it was turned on, as hosted (the answer carries
 * `time_remaining`).
 */
export const DEVELOPMENT_MODE_MS = 3 * 3600_000;

/**
 * The zone settings this platform has, by their hosted ids, in the order `GET /zones/{id}/settings` lists them. A
 * name not here is refused (1006): none is accepted and ignored. Defaults are the hosted ones for a new zone, except
 * `ssl`, which starts at `flexible` (plain HTTP to the origin's port 80) so that an origin without TLS works.
 */
export const SETTINGS: ReadonlyMap<string, SettingSpec> = new Map<string, SettingSpec>([
  ["always_use_https", { default: "off", parse: onOff("always_use_https") }],
  [
    "browser_cache_ttl",
    {
      default: 14400,
      parse: (v) => {
        if (typeof v === "number" && BROWSER_CACHE_TTLS.includes(v)) return v;
        throw EdgeErrors.invalidValue("browser_cache_ttl", `it takes a number of seconds among ${BROWSER_CACHE_TTLS.join(", ")}`);
      },
    },
  ],
  ["cache_level", { default: "aggressive", parse: oneOf("cache_level", ["aggressive", "basic", "simplified"]) }],
  ["development_mode", { default: "off", parse: onOff("development_mode") }],
  ["http2", { default: "on", parse: onOff("http2") }],
  ["ipv6", { default: "on", parse: onOff("ipv6") }],
  ["min_tls_version", { default: "1.0", parse: oneOf("min_tls_version", ["1.0", "1.1", "1.2", "1.3"]) }],
  ["ssl", { default: "flexible", parse: oneOf("ssl", ["off", "flexible", "full", "strict"]) }],
  [
    "tls_1_3",
    {
      default: "on",
      // Hosted also takes "zrt" (TLS 1.3 with 0-RTT): Node's TLS has no early data, so it is refused, not taken as "on".
      parse: (v) => {
        if (v === "zrt") throw EdgeErrors.invalidValue("tls_1_3", '"zrt" (TLS 1.3 with 0-RTT) is not provided here; it takes "on" or "off"');
        return oneOf("tls_1_3", ["on", "off"])(v);
      },
    },
  ],
  ["websockets", { default: "on", parse: onOff("websockets") }],
]);

export type SslMode = "off" | "flexible" | "full" | "strict";

/** The spec of a setting the caller named, or the hosted refusal (1006). */
export function settingSpec(id: string): SettingSpec {
  const spec = SETTINGS.get(id);
  if (!spec) throw EdgeErrors.unknownSetting(id);
  return spec;
}

/** A value for a setting as it will be stored (parsed), or the refusal naming what it takes. */
export function parseSetting(id: string, value: unknown): SettingValue {
  return settingSpec(id).parse(value);
}
