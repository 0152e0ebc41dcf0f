// The dashboard: a client of the v4 API in the browser, with the same token a CLI would use. This module routes
// location hashes to pages and handles signing in and out.
import { api, ApiFailure, session, TOKEN_KEY } from "./api.js";
import { h, notify, setRerender } from "./dom.js";
import { dataNested, dataPages } from "./pages-data.js";
import { pages as basePages } from "./pages.js";
import { zoneNested, zonePages } from "./pages-zone.js";
import { logsNested, logsPages } from "./worker-logs.js";

/** Every page by name; each area's module brings its own (kept apart so areas change without touching each other). */
const pages = { ...basePages, ...dataPages, ...zonePages, ...logsPages };
/** Areas whose `#/<area>/<id>` hash names one item, and the page that shows it. */
const nested = { dns: "zone", kv: "namespace", r2: "bucket", "ai-gateway": "gatewayLogs", ...dataNested, ...zoneNested, ...logsNested };

const main = document.getElementById("main");

/** The page a location hash names, as [page, arguments]. */
function route(hash) {
  const [area, id, sub, more] = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  // The hash is the visitor's: it is looked up only as the objects' own names, never as an inherited property.
  if (id && Object.hasOwn(nested, area)) return [nested[area], [id, sub, more]];
  return [Object.hasOwn(pages, area) ? area : "overview", []];
}

/** Counts renders, so a slow page that finishes after the user moved on does not replace the newer one. */
let renders = 0;

async function render() {
  const mine = ++renders;
  // Busy until the page is replaced: what is typed into the old page meanwhile is lost (assistive technology and the
  // tests wait for it); data-rendered counts finished renders.
  main.setAttribute("aria-busy", "true");
  const [name, args] = route(location.hash);
  const section = location.hash.split("/")[1] === "worker-logs" ? "workers" : location.hash.split("/")[1];
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.getAttribute("href") === `#/${section ?? ""}`);
  let content;
  try {
    content = (await pages[name](...args)).filter(Boolean);
  } catch (err) {
    content = [h("p", {}, err instanceof ApiFailure ? err.message : `Could not load this page: ${err.message}`)];
  }
  if (mine === renders) {
    main.replaceChildren(...content);
    main.removeAttribute("aria-busy");
    main.dataset.rendered = String(mine);
  }
}

function signInPage(message) {
  document.getElementById("nav").hidden = true;
  document.getElementById("sign-out").hidden = true;
  document.getElementById("who").textContent = "";
  const input = h("input", { name: "token", type: "password", autocomplete: "off", required: true, size: 48 });
  const f = h("form", { name: "sign-in" }, h("label", {}, "API token", input), h("button", { type: "submit" }, "Sign in"));
  f.addEventListener("submit", async (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    await start();
  });
  main.replaceChildren(
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste an API token of this platform. The first start printed one and kept it in .edge/credentials.json (api_token)."),
    f,
  );
  notify(message ?? "");
}

async function start() {
  if (!sessionStorage.getItem(TOKEN_KEY)) return signInPage();
  try {
    await api("GET", "/user/tokens/verify");
    const accounts = (await api("GET", "/accounts")).result;
    if (accounts.length === 0) throw new ApiFailure("This token cannot see any account.");
    session.account = accounts[0];
  } catch (err) {
    sessionStorage.removeItem(TOKEN_KEY);
    return signInPage(err instanceof ApiFailure ? `Sign-in failed: ${err.message}` : `Sign-in failed: ${err.message}`);
  }
  notify("");
  document.getElementById("nav").hidden = false;
  document.getElementById("sign-out").hidden = false;
  document.getElementById("who").textContent = session.account.name;
  await render();
}

document.getElementById("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  session.account = undefined;
  location.hash = "#/";
  signInPage();
});
setRerender(render);
window.addEventListener("hashchange", () => {
  notify("");
  if (session.account) void render();
});
void start();
