import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { withTempDir } from "../../core/testing/temp-dir.js";
import { capnpString } from "./capnp-string.js";
import { EXPERIMENTAL_COMPATIBILITY_FLAGS, firstExperimentalFlag } from "./experimental-flags.js";
import { defaultWorkerdPath } from "./workerd-binary.js";

/**
 * What the installed workerd says of a worker asking for `flag`, run without --experimental: `workerd test` loads
 * the config (and checks its flags) and stops, as there are no tests to run.
 */
function workerdOn(dir: string, flag: string): Promise<string> {
  const file = join(dir, `${flag}.capnp`);
  writeFileSync(
    file,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (services = [(name = "main", worker = (modules = [(name = "w.js", esModule = embed "w.js")], compatibilityDate = "2024-09-01", compatibilityFlags = [${capnpString(flag)}]))]);
`,
  );
  return new Promise((resolve) => {
    execFile(defaultWorkerdPath(), ["test", file], { timeout: 60_000 }, (_err, stdout, stderr) => resolve(`${stdout}${stderr}`));
  });
}

test("every flag of the list is one the installed workerd refuses without --experimental; others it takes", async () => {
  await withTempDir("experimental-flags-", async (dir) => {
    writeFileSync(join(dir, "w.js"), "export default { fetch() { return new Response('x'); } };");
    const flags = [...EXPERIMENTAL_COMPATIBILITY_FLAGS];
    // A few at a time: each is a workerd process.
    for (let i = 0; i < flags.length; i += 4) {
      await Promise.all(
        flags.slice(i, i + 4).map(async (flag) => {
          const said = await workerdOn(dir, flag);
          assert.match(said, new RegExp(`compatibility flag ${flag} is experimental`), `${flag}: ${said}`);
        }),
      );
    }
    for (const flag of ["nodejs_compat", "no_precise_timers"]) {
      const said = await workerdOn(dir, flag);
      assert.doesNotMatch(said, /is experimental/, said);
      assert.match(said, /No tests found/, said);
    }
  });
});

test("firstExperimentalFlag names the first experimental flag and where it is", () => {
  assert.equal(firstExperimentalFlag([]), undefined);
  assert.equal(firstExperimentalFlag(["nodejs_compat", "no_precise_timers"]), undefined);
  assert.deepEqual(firstExperimentalFlag(["nodejs_compat", "js_rpc", "experimental"]), { flag: "js_rpc", index: 1 });
});
