import type { AssetConfig } from "./store.js";

/** What a path of a Worker's assets answers: a file (with its status), a redirect, or nothing. */
export type Resolution = { kind: "file"; path: string; status: 200 | 404 } | { kind: "redirect"; to: string } | { kind: "none" };

const file = (path: string, status: 200 | 404 = 200): Resolution => ({ kind: "file", path, status });
const redirect = (to: string): Resolution => ({ kind: "redirect", to });
const NONE: Resolution = { kind: "none" };

/**
 * The hosted platform's `html_handling` rules for a decoded path (`has` says whether the manifest has a file):
 * - `auto-trailing-slash` (default): `/about.html` is served at `/about`, `/blog/index.html` at `/blog/`; the other
 *   spellings (`/about.html`, `/about/`, `/blog`, `/blog/index.html`) redirect there (307).
 * - `force-trailing-slash`: both are served with a trailing slash (`/about/`, `/blog/`).
 * - `drop-trailing-slash`: both without (`/about`, `/blog`).
 * - `none`: only exact paths.
 * A file that is not HTML is served at its exact path only.
 */
export function resolveHtml(path: string, has: (p: string) => boolean, mode: AssetConfig["html_handling"]): Resolution {
  if (mode === "none") return has(path) ? file(path) : NONE;
  const slash = mode === "force-trailing-slash";
  const drop = mode === "drop-trailing-slash";
  // Explicit spellings of an HTML file redirect to its served form.
  if (path.endsWith("/index.html") && has(path)) {
    const dir = path.slice(0, -"index.html".length);
    return redirect(drop && dir !== "/" ? dir.slice(0, -1) : dir);
  }
  if (path.endsWith(".html") && has(path)) {
    const bare = path.slice(0, -".html".length);
    return redirect(slash ? `${bare}/` : bare);
  }
  if (path.endsWith("/")) {
    if (has(`${path}index.html`)) return drop && path !== "/" ? redirect(path.slice(0, -1)) : file(`${path}index.html`);
    const bare = path.slice(0, -1);
    if (bare && has(`${bare}.html`)) return slash ? file(`${bare}.html`) : redirect(bare);
    return NONE;
  }
  if (has(path)) return file(path);
  if (has(`${path}.html`)) return slash ? redirect(`${path}/`) : file(`${path}.html`);
  if (has(`${path}/index.html`)) return drop ? file(`${path}/index.html`) : redirect(`${path}/`);
  return NONE;
}

/** `not_found_handling`: the SPA's `/index.html` (200), or the nearest `404.html` up the path (404). */
export function resolveNotFound(path: string, has: (p: string) => boolean, mode: AssetConfig["not_found_handling"]): Resolution {
  if (mode === "single-page-application") return has("/index.html") ? file("/index.html") : NONE;
  if (mode === "404-page") {
    for (let dir = path.slice(0, path.lastIndexOf("/") + 1); ; dir = dir.slice(0, dir.slice(0, -1).lastIndexOf("/") + 1)) {
      if (has(`${dir}404.html`)) return file(`${dir}404.html`, 404);
      if (dir === "/" || dir === "") return NONE;
    }
  }
  return NONE;
}
