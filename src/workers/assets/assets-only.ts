import type { ModuleSource } from "../store.js";

/**
 * The module of an assets-only Worker: an upload with `assets` and no code (wrangler sends one for a config with
 * `[assets]` and no `main`, and so does `edgecli deploy`). Its default export has no handlers, so the edge answers
 * every request from the files (`serveEdge`): a match, else not_found_handling, else a 404; methods other than GET
 * and HEAD a 405. The module is stored like any other, so the Worker has versions, a name and assets as usual.
 */
export const ASSETS_ONLY_MODULE: ModuleSource = {
  name: "assets-only.js",
  kind: "esModule",
  content: Buffer.from("// An assets-only Worker: the platform serves its files; this module has no handlers.\nexport default {};\n"),
};
