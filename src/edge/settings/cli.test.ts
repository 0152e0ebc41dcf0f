import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startTestPlatform, type CliResult, type TestPlatform } from "../../core/testing/platform.js";
import { createAccount } from "../../workers/testing/helpers.js";
import { commands } from "../commands.js";
import { SETTINGS } from "./definitions.js";

// `edgecli settings get|set`: the zone settings API from the command line, on the real CLI and platform, with a
// second account whose token must not reach the first account's zone.
let p: TestPlatform;
let zone: string;
let tokenB: string;
before(async () => {
  p = await startTestPlatform();
  zone = (await p.api("POST", "/zones", { name: "cli-settings.example", account: { id: p.accountId } })).body.result.id;
  const accountB = await createAccount(p, "cli-settings-b");
  const t = await p.api("POST", "/user/tokens", { name: "b", permissions: ["zone_settings_edit", "dns_edit"], account_id: accountB }, p.keyHeaders());
  assert.equal(t.status, 200, JSON.stringify(t.body));
  tokenB = t.body.result.value;
});
after(() => p?.dispose());

const ok = (r: CliResult) => {
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
};
const refused = (r: CliResult, reason: RegExp) => {
  assert.equal(r.code, 1, `expected a refusal\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.match(r.stderr, reason);
  assert.equal(r.stdout, "");
};
const stored = async (id: string) => (await p.api("GET", `/zones/${zone}/settings/${id}`)).body.result.value;

test("settings get: every setting as JSON in the API's order, or one value alone", async () => {
  const all = JSON.parse(ok(await p.cli(["settings", "get", "cli-settings.example"])).stdout);
  assert.deepEqual(Object.keys(all), [...SETTINGS.keys()]);
  assert.equal(all.ssl, "flexible");
  assert.equal(all.browser_cache_ttl, 14400);
  assert.equal(ok(await p.cli(["settings", "get", zone, "ssl"])).stdout, "flexible\n", "by id too");
});

test("settings set: strings, TLS versions and numbers reach the API as the setting takes them", async () => {
  assert.match(
    ok(await p.cli(["settings", "set", "cli-settings.example", "always_use_https", "on"])).stdout,
    /Set always_use_https of cli-settings\.example to on\./,
  );
  assert.equal(await stored("always_use_https"), "on");
  ok(await p.cli(["settings", "set", "cli-settings.example", "min_tls_version", "1.2"]));
  assert.equal(await stored("min_tls_version"), "1.2");
  ok(await p.cli(["settings", "set", "cli-settings.example", "browser_cache_ttl", "3600"]));
  assert.equal(await stored("browser_cache_ttl"), 3600);
  assert.equal(ok(await p.cli(["settings", "get", "cli-settings.example", "browser_cache_ttl"])).stdout, "3600\n");
});

test("settings set refuses what the API refuses, with its code and reason on stderr, and changes nothing", async () => {
  refused(await p.cli(["settings", "set", "cli-settings.example", "rocket_loader", "on"]), /Unrecognized zone setting name: rocket_loader \[code: 1006\]/);
  refused(await p.cli(["settings", "set", "cli-settings.example", "ssl", "sometimes"]), /it takes one of "off", "flexible", "full", "strict" \[code: 1007\]/);
  refused(await p.cli(["settings", "set", "cli-settings.example", "browser_cache_ttl", "61"]), /\[code: 1007\]/);
  assert.equal(await stored("ssl"), "flexible");
  assert.equal(await stored("browser_cache_ttl"), 3600);
  refused(await p.cli(["settings", "set", "cli-settings.example", "ssl"]), /value/);
  refused(await p.cli(["settings", "set", "nowhere.example", "ssl", "off"]), /There is no zone nowhere\.example/);
  // Names that are path dots: never a request to another path (`..` was a PATCH of `/zones/<id>/`).
  for (const name of [".", "..", "a/b"]) {
    refused(await p.cli(["settings", "set", "cli-settings.example", name, "on"]), /Unrecognized zone setting name/);
    refused(await p.cli(["settings", "get", "cli-settings.example", name]), /Unrecognized zone setting name/);
  }
  assert.equal(await stored("ssl"), "flexible");
});

test("another account's token neither reads nor changes the zone, by name or by id", async () => {
  const asB = { env: { EDGE_API_TOKEN: tokenB, EDGE_ACCOUNT_ID: "" } };
  refused(await p.cli(["settings", "set", "cli-settings.example", "ssl", "off"], asB), /There is no zone cli-settings\.example/);
  // As for a missing zone (the hosted 1001), so B cannot tell A's zone exists.
  refused(await p.cli(["settings", "set", zone, "ssl", "off"], asB), /Invalid zone identifier \[code: 1001\]/);
  refused(await p.cli(["settings", "get", zone], asB), /Invalid zone identifier \[code: 1001\]/);
  assert.equal(await stored("ssl"), "flexible");
});

test("settings set's help names every setting the platform has", () => {
  const set = commands.find((c) => c.path.join(" ") === "settings set")!;
  const described = set.positionals!.find((a) => a.name === "setting")!.describe;
  const named = described
    .slice(described.indexOf(":") + 1)
    .split(",")
    .map((s) => s.trim());
  assert.deepEqual(named, [...SETTINGS.keys()]);
});
