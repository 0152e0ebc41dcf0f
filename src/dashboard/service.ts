import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { EdgeService, ServiceContext } from "../core/service.js";

/** Copied here by the build (scripts/copy-assets.mjs); the same place from dist/dashboard/ and from the bundle in dist/bin/. */
const UI_DIR = fileURLToPath(new URL("../dashboard-ui/", import.meta.url));

const JS = "text/javascript; charset=utf-8";
const FILES: Record<string, string> = {
  "index.html": "text/html; charset=utf-8",
  "app.js": JS,
  "api.js": JS,
  "dom.js": JS,
  "pages.js": JS,
  "pages-data.js": JS,
  "pages-zone.js": JS,
  "charts.js": JS,
  "worker-logs.js": JS,
  "style.css": "text/css; charset=utf-8",
  // uPlot, the chart library (copied from node_modules by the build).
  "uPlot.esm.js": JS,
  "uPlot.min.css": "text/css; charset=utf-8",
};

/**
 * The page may run only its own script and talk only to this origin; it cannot be framed (clickjacking) and
 * sends no Referer (a dashboard URL names zones and keys).
 */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const [name, type] of Object.entries(FILES)) {
    const body = readFileSync(dir + name);
    assets.set(name, { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` });
  }
  return assets;
}

/**
 * The web dashboard at /dash/: static files of a page that is a client of the v4 API with the user's own API
 * token (it has no server-side session or powers of its own). `/` leads there.
 */
export function createDashboardService(ctx: ServiceContext): EdgeService {
  return {
    name: "dashboard",
    registerPublic(app) {
      // Read once at start: a package missing its dashboard files fails there, not on a visitor's request.
      const assets = loadAssets(UI_DIR);
      const serve = (path: string, a: Asset) =>
        app.get(path, (req, reply) => {
          reply.headers(SECURITY_HEADERS).header("etag", a.etag);
          if (req.headers["if-none-match"] === a.etag) return reply.status(304).send();
          return reply.type(a.type).send(a.body);
        });
      app.get("/", (_req, reply) => reply.redirect("/dash/"));
      app.get("/dash", (_req, reply) => reply.redirect("/dash/"));
      for (const [name, asset] of assets) serve(name === "index.html" ? "/dash/" : `/dash/${name}`, asset);
    },
    describe: () => ({ dashboard: `${ctx.edgeUrl()}/dash/` }),
  };
}
