// The Node flags a built `edgecli` bin starts Node with (its `#!/usr/bin/env -S node <flags>` line): a bench that
// starts the bin through `process.execPath` passes them too, so it measures the platform as `edgecli serve` runs.
// The unbundled dist/cli.js has none of its own: it gets those of dist/bin/edgecli.js beside it.
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** Flags on a file's `#!/usr/bin/env -S node …` line ([] when it has none). */
function shebangFlags(path) {
  const first = readFileSync(path, "utf8").split("\n", 1)[0];
  const m = /^#!\/usr\/bin\/env -S node(?<flags>( \S+)*)\s*$/.exec(first);
  return m ? m.groups.flags.split(" ").filter(Boolean) : [];
}

export function binNodeFlags(cliPath) {
  if (basename(cliPath) === "cli.js" && existsSync(join(dirname(cliPath), "bin", "edgecli.js")))
    return shebangFlags(join(dirname(cliPath), "bin", "edgecli.js"));
  return shebangFlags(cliPath);
}
