#!/usr/bin/env node
// npm's `prepare` step: builds dist/ once, when it is missing or older than the sources, and says so.
//
// npm runs `prepare` on `npm install` in the checkout, on `npm link` / `npm install -g .`, and also on the first
// `npx edgecli` in the checkout (npm exec installs the project's own bin as a linked package, which runs its
// `prepare`). An unconditional `npm run build` there made `npx edgecli` sit silent for 30–60 s although dist/ was
// already built; now a current build is kept and a needed one is announced.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const built = statSync(join(root, "dist", "bin", "edgecli.js"), { throwIfNoEntry: false });

/** The newest modification time among the build's inputs. */
function newestInput() {
  let newest = 0;
  const visit = (p) => {
    const s = statSync(p, { throwIfNoEntry: false });
    if (!s) return;
    if (s.isDirectory()) for (const name of readdirSync(p)) visit(join(p, name));
    else newest = Math.max(newest, s.mtimeMs);
  };
  for (const input of ["src", "scripts", "package.json", "package-lock.json", "tsconfig.json"]) visit(join(root, input));
  return newest;
}

if (built && built.mtimeMs >= newestInput()) {
  console.error("edgecli: dist/ is up to date with the sources; not rebuilding (`npm run build` forces it).");
  process.exit(0);
}
console.error(
  `edgecli: ${built ? "the sources changed since dist/ was built" : "no build yet"}: running \`npm run build\` (TypeScript, the native DNS addon, the CLI bundle; 20–60 s)…`,
);
const npm = process.env.npm_execpath;
const r = npm?.endsWith(".js")
  ? spawnSync(process.execPath, [npm, "run", "build"], { cwd: root, stdio: "inherit" })
  : spawnSync("npm", ["run", "build"], { cwd: root, stdio: "inherit" });
process.exit(r.status ?? 1);
