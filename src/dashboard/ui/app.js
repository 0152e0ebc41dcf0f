// The dashboard: a client of the v4 API in the browser, with the same token a CLI would use. Every value from
// the API reaches the page through textContent (never as HTML), so a record, key or log cannot inject markup.
// The token lives in sessionStorage only: gone when the tab closes, never in a URL or a cookie.
const API = "/client/v4";
const TOKEN_KEY = "edge-platform.token";
const main = document.getElementById("main");
const alertBox = document.getElementById("alert");
let account;

class ApiFailure extends Error {}

/** One v4 call; a failed envelope becomes an ApiFailure whose message lists each error with its code. */
async function api(method, path, body, raw = false) {
  const headers = { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` };
  if (body !== undefined && typeof body !== "string") headers["content-type"] = "application/json";
  const res = await fetch(API + path, { method, headers, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body) });
  if (raw && res.ok) return res.text();
  const env = await res.json().catch(() => ({ success: false, errors: [{ code: res.status, message: res.statusText }] }));
  if (!res.ok || !env.success) throw new ApiFailure((env.errors ?? []).map((e) => `${e.message} (code ${e.code})`).join("; ") || `HTTP ${res.status}`);
  return env;
}

/** Builds an element; string children become text nodes. */
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== false) el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}

function notify(text, kind = "error") {
  alertBox.textContent = text;
  alertBox.className = kind;
  alertBox.hidden = !text;
}

/** Runs an action, shows what went wrong in the alert box, and says whether it succeeded. */
async function attempt(action) {
  try {
    await action();
    return true;
  } catch (err) {
    notify(err instanceof ApiFailure ? err.message : `Request failed: ${err.message}`);
    return false;
  }
}

const link = (text, hash) => h("a", { href: hash }, text);
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");

function table(columns, rows, empty) {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c.label)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, columns.map((c) => h("td", {}, c.value(r) ?? ""))))),
  );
}

/** A form from field descriptions; `submit` gets the values (numbers and checkboxes typed) and may throw. */
function form(name, fields, submitLabel, submit) {
  const inputs = fields.map((f) => {
    const input =
      f.type === "select"
        ? h("select", { name: f.name }, f.options.map((o) => h("option", { value: o, selected: o === f.value }, o)))
        : f.type === "textarea"
          ? h("textarea", { name: f.name, rows: 3, placeholder: f.placeholder ?? "", required: f.required })
          : f.type === "checkbox"
            ? h("input", { name: f.name, type: "checkbox", checked: !!f.value })
            : h("input", { name: f.name, type: f.type ?? "text", placeholder: f.placeholder ?? "", required: f.required, value: f.value });
    return { f, input, el: h("label", {}, f.label, input) };
  });
  const el = h("form", { name }, inputs.map((i) => i.el), h("button", { type: "submit" }, submitLabel));
  el.addEventListener("submit", async (e) => {
    e.preventDefault();
    const values = {};
    for (const { f, input } of inputs) {
      if (f.type === "checkbox") values[f.name] = input.checked;
      else if (f.type === "number") values[f.name] = input.value === "" ? undefined : Number(input.value);
      else values[f.name] = input.value;
    }
    if (await attempt(() => submit(values))) {
      notify(`${submitLabel}: done`, "info");
      await render();
    }
  });
  return el;
}

/** A button that runs `action`, asking first when `confirmText` is given, then shows `doneText` and re-renders. */
const actionButton = (label, action, { confirmText, doneText }) =>
  h("button", {
    type: "button",
    onclick: async () => {
      if (confirmText && !confirm(confirmText)) return;
      if (await attempt(action)) {
        notify(doneText, "info");
        await render();
      }
    },
  }, label);

const removeButton = (what, remove) => actionButton("Delete", remove, { confirmText: `Delete ${what}?`, doneText: `Deleted ${what}` });

/**
 * One list page: loads rows, shows them in a table, with an optional create form above it. Every list in the
 * dashboard is one of these, so they all behave alike.
 */
function listPage({ title, load, rows: pick = (env) => env.result, columns, empty, create, extra }) {
  return async () => {
    const env = await load();
    const rows = pick(env);
    const more = hasMore(env.result_info, rows.length)
      ? h("p", { class: "muted", id: "more" }, `Showing the first ${rows.length}; edgecli and the v4 API list the rest.`)
      : null;
    return [h("h1", {}, title), create ? form(create.name, create.fields, create.label, create.submit) : null, extra ?? null, table(columns, rows, empty), more];
  };
}

/** Whether the API holds more than the one page it answered (counted, cursor and truncated lists alike). */
const hasMore = (info, shown) => !!info && ((info.total_count ?? 0) > shown || !!info.cursor || !!info.is_truncated);

const acct = (path) => `/accounts/${account.id}${path}`;
const enc = encodeURIComponent;

const gatewaysPage = listPage({
  title: "AI gateways",
  empty: "No gateways yet.",
  load: () => api("GET", acct("/ai-gateway/gateways?per_page=50")),
  columns: [
    { label: "Gateway", value: (g) => link(g.id, `#/ai-gateway/${g.id}`) },
    {
      label: "Authentication",
      value: (g) => [
        g.authentication ? "on " : "off ",
        actionButton(g.authentication ? "Turn off" : "Turn on", () => api("PUT", acct(`/ai-gateway/gateways/${g.id}`), { ...g, authentication: !g.authentication }), {
          doneText: `Authentication of ${g.id} is ${g.authentication ? "off" : "on"}`,
        }),
      ],
    },
    { label: "Logs", value: (g) => (g.collect_logs ? "collected" : "off") },
    { label: "Cache TTL", value: (g) => (g.cache_ttl ? `${g.cache_ttl} s` : "off") },
    { label: "Rate limit", value: (g) => (g.rate_limiting_limit ? `${g.rate_limiting_limit} / ${g.rate_limiting_interval} s (${g.rate_limiting_technique})` : "off") },
    { label: "", value: (g) => removeButton(`gateway ${g.id}`, () => api("DELETE", acct(`/ai-gateway/gateways/${g.id}`))) },
  ],
  create: {
    name: "create-gateway",
    label: "Create gateway",
    fields: [
      { name: "id", label: "Id", placeholder: "my-gateway", required: true },
      { name: "authentication", label: "Require a gateway token", type: "checkbox" },
      { name: "collect_logs", label: "Collect logs", type: "checkbox" },
    ],
    submit: (v) => api("POST", acct("/ai-gateway/gateways"), { ...v, cache_ttl: 0, cache_invalidate_on_update: false, rate_limiting_interval: 0, rate_limiting_limit: 0, rate_limiting_technique: "fixed" }),
  },
});

const RECORD_TYPES = ["A", "AAAA", "CNAME", "TXT", "MX", "NS", "CAA", "SRV", "PTR"];
/** The DNS record the zone page shows in its editor on its next render. */
let editing;

/** A new token's value, shown once on the next render of the gateway page and then forgotten. */
let newToken;

/** API tokens with the AI Gateway Run permission: what clients send in gw-aig-authorization. */
async function gatewayTokens() {
  const all = (await api("GET", acct("/tokens?per_page=50"))).result;
  const run = all.filter((t) => t.policies.some((p) => p.permission_groups.some((g) => g.id === "ai_gateway_run")));
  const shown = newToken;
  newToken = undefined;
  return [
    h("h2", {}, "Gateway tokens"),
    h("p", { class: "muted" }, "Clients send one as gw-aig-authorization: Bearer <token> (SDKs: the default header gw-aig-token). Send it on every request first, then turn authentication on."),
    shown ? h("div", { id: "new-token" }, h("p", {}, `Token ${shown.name} created. Copy the value now: it is not shown again.`), h("pre", {}, shown.value)) : null,
    form("create-token", [{ name: "name", label: "Name", placeholder: "my-app", required: true }], "Create gateway token", async (v) => {
      newToken = (await api("POST", acct("/tokens"), { name: v.name, permissions: ["ai_gateway_run"] })).result;
    }),
    table(
      [
        { label: "Name", value: (t) => t.name },
        { label: "Status", value: (t) => t.status },
        { label: "Issued", value: (t) => when(t.issued_on) },
        { label: "Last used", value: (t) => (t.last_used_on ? when(t.last_used_on) : "never") },
        {
          label: "",
          value: (t) =>
            actionButton("Revoke", () => api("DELETE", acct(`/tokens/${t.id}`)), { confirmText: `Revoke token ${t.name}? Requests that send it are refused at once.`, doneText: `Revoked ${t.name}` }),
        },
      ],
      run,
      "No gateway tokens yet.",
    ),
  ];
}

const pages = {
  async overview() {
    const counts = await Promise.all([
      api("GET", `/zones?account.id=${account.id}&per_page=1`).then((e) => e.result_info?.total_count ?? e.result.length),
      api("GET", acct("/storage/kv/namespaces?per_page=1")).then((e) => e.result_info?.total_count ?? e.result.length),
      api("GET", acct("/r2/buckets")).then((e) => e.result.buckets.length),
      api("GET", acct("/workers/scripts")).then((e) => e.result.length),
      api("GET", acct("/ai-gateway/gateways?per_page=1")).then((e) => e.result_info?.total_count ?? e.result.length),
    ]);
    const names = ["DNS zones", "KV namespaces", "R2 buckets", "Worker scripts", "AI gateways"];
    const hashes = ["#/dns", "#/kv", "#/r2", "#/workers", "#/ai-gateway"];
    return [
      h("h1", {}, account.name),
      h("p", { class: "muted" }, `Account ${account.id}`),
      h("div", { class: "cards" }, names.map((n, i) => h("a", { class: "card", href: hashes[i], "data-count": n }, h("div", { class: "n" }, counts[i]), n))),
    ];
  },

  dns: listPage({
    title: "DNS zones",
    empty: "No zones yet.",
    load: () => api("GET", `/zones?account.id=${account.id}&per_page=50`),
    columns: [
      { label: "Zone", value: (z) => link(z.name, `#/dns/${z.id}`) },
      { label: "Status", value: (z) => z.status },
      { label: "Name servers", value: (z) => z.name_servers.join(", ") },
      { label: "", value: (z) => removeButton(`zone ${z.name}`, () => api("DELETE", `/zones/${z.id}`)) },
    ],
    create: { name: "create-zone", label: "Add zone", fields: [{ name: "name", label: "Domain", placeholder: "example.com", required: true }], submit: (v) => api("POST", "/zones", { name: v.name, account: { id: account.id } }) },
  }),

  async zone(zoneId) {
    const zone = (await api("GET", `/zones/${zoneId}`)).result;
    const record = editing?.zone_id === zoneId ? editing : undefined;
    editing = undefined;
    const fields = (r = {}) => [
      { name: "type", label: "Type", type: "select", options: RECORD_TYPES, value: r.type },
      { name: "name", label: "Name", placeholder: `www.${zone.name}`, required: true, value: r.name },
      { name: "content", label: "Content", required: true, value: r.content },
      { name: "ttl", label: "TTL (1 = auto)", type: "number", value: String(r.ttl ?? 1) },
      { name: "priority", label: "Priority (MX)", type: "number", value: r.priority === undefined ? undefined : String(r.priority) },
      { name: "proxied", label: "Proxied", type: "checkbox", value: r.proxied },
    ];
    const editor = record
      ? h(
          "div",
          { id: "edit-record" },
          h("h2", {}, `Edit ${record.type} record ${record.name}`),
          form("edit-record", fields(record), "Save changes", (v) => api("PATCH", `/zones/${zoneId}/dns_records/${record.id}`, v)),
          h("button", { type: "button", onclick: () => render() }, "Cancel"),
        )
      : null;
    return listPage({
      title: `DNS records of ${zone.name}`,
      empty: "No records yet.",
      extra: editor,
      load: () => api("GET", `/zones/${zoneId}/dns_records?per_page=100`),
      columns: [
        { label: "Type", value: (r) => r.type },
        { label: "Name", value: (r) => r.name },
        { label: "Content", value: (r) => r.content },
        { label: "TTL", value: (r) => (r.ttl === 1 ? "Auto" : r.ttl) },
        { label: "Proxied", value: (r) => (r.proxied ? "yes" : "no") },
        {
          label: "",
          value: (r) => [
            h("button", { type: "button", onclick: () => ((editing = r), render()) }, "Edit"),
            removeButton(`${r.type} record ${r.name}`, () => api("DELETE", `/zones/${zoneId}/dns_records/${r.id}`)),
          ],
        },
      ],
      create: { name: "create-record", label: "Add record", fields: fields(), submit: (v) => api("POST", `/zones/${zoneId}/dns_records`, v) },
    })();
  },

  kv: listPage({
    title: "KV namespaces",
    empty: "No namespaces yet.",
    load: () => api("GET", acct("/storage/kv/namespaces?per_page=100")),
    columns: [
      { label: "Title", value: (n) => link(n.title, `#/kv/${n.id}`) },
      { label: "Id", value: (n) => n.id },
      { label: "", value: (n) => removeButton(`namespace ${n.title}`, () => api("DELETE", acct(`/storage/kv/namespaces/${n.id}`))) },
    ],
    create: { name: "create-namespace", label: "Create namespace", fields: [{ name: "title", label: "Title", required: true }], submit: (v) => api("POST", acct("/storage/kv/namespaces"), v) },
  }),

  async namespace(nsId, key) {
    const base = acct(`/storage/kv/namespaces/${nsId}`);
    const value = key === undefined ? null : h("div", {}, h("h2", {}, `Value of ${key}`), h("pre", { id: "kv-value" }, await api("GET", `${base}/values/${enc(key)}`, undefined, true)));
    return listPage({
      title: "Keys",
      empty: "No keys in this namespace.",
      extra: value,
      load: () => api("GET", `${base}/keys?limit=1000`),
      columns: [
        { label: "Key", value: (k) => link(k.name, `#/kv/${nsId}/${enc(k.name)}`) },
        { label: "Expires", value: (k) => (k.expiration ? when(k.expiration * 1000) : "never") },
        { label: "", value: (k) => removeButton(`key ${k.name}`, () => api("DELETE", `${base}/values/${enc(k.name)}`)) },
      ],
      create: {
        name: "put-key",
        label: "Put key",
        fields: [
          { name: "key", label: "Key", required: true },
          { name: "value", label: "Value", type: "textarea", required: true },
        ],
        submit: (v) => api("PUT", `${base}/values/${enc(v.key)}`, v.value),
      },
    })();
  },

  r2: listPage({
    title: "R2 buckets",
    empty: "No buckets yet.",
    load: () => api("GET", acct("/r2/buckets")),
    rows: (env) => env.result.buckets,
    columns: [
      { label: "Bucket", value: (b) => link(b.name, `#/r2/${b.name}`) },
      { label: "Created", value: (b) => when(b.creation_date) },
      { label: "", value: (b) => removeButton(`bucket ${b.name}`, () => api("DELETE", acct(`/r2/buckets/${b.name}`))) },
    ],
    create: { name: "create-bucket", label: "Create bucket", fields: [{ name: "name", label: "Name", placeholder: "my-bucket", required: true }], submit: (v) => api("POST", acct("/r2/buckets"), v) },
  }),

  bucket: (name) =>
    listPage({
      title: `Objects in ${name}`,
      empty: "The bucket is empty.",
      load: () => api("GET", acct(`/r2/buckets/${name}/objects?per_page=1000`)),
      columns: [
        { label: "Key", value: (o) => o.key },
        { label: "Size", value: (o) => `${o.size} B` },
        { label: "Type", value: (o) => o.http_metadata?.contentType ?? "" },
        { label: "Uploaded", value: (o) => when(o.last_modified ?? o.uploaded) },
        { label: "", value: (o) => removeButton(`object ${o.key}`, () => api("DELETE", acct(`/r2/buckets/${name}/objects/${o.key.split("/").map(enc).join("/")}`))) },
      ],
    })(),

  async workers() {
    const domain = (await api("GET", acct("/workers/subdomain"))).result.subdomain;
    const port = location.port ? `:${location.port}` : "";
    return listPage({
      title: "Worker scripts",
      empty: "No scripts deployed. Deploy one with `edgecli deploy` (docs/workers.md).",
      load: () => api("GET", acct("/workers/scripts")),
      columns: [
        { label: "Script", value: (s) => s.id },
        { label: "URL", value: (s) => `${location.protocol}//${s.id}.${domain}${port}/` },
        { label: "Modified", value: (s) => when(s.modified_on) },
        { label: "", value: (s) => removeButton(`script ${s.id}`, () => api("DELETE", acct(`/workers/scripts/${s.id}`))) },
      ],
    })();
  },

  "ai-gateway": async () => [...(await gatewaysPage()), ...(await gatewayTokens())],

  gatewayLogs: (id) =>
    listPage({
      title: `Logs of gateway ${id}`,
      empty: "No requests logged yet.",
      load: () => api("GET", acct(`/ai-gateway/gateways/${id}/logs?per_page=50&order_by=created_at&order_by_direction=desc`)),
      columns: [
        { label: "Time", value: (l) => when(l.created_at) },
        { label: "Provider", value: (l) => l.provider },
        { label: "Model", value: (l) => l.model },
        { label: "Status", value: (l) => l.status_code },
        { label: "Cached", value: (l) => (l.cached ? "yes" : "no") },
        { label: "Duration", value: (l) => `${l.duration} ms` },
        { label: "Tokens in/out", value: (l) => `${l.tokens_in ?? "–"} / ${l.tokens_out ?? "–"}` },
        { label: "Cost", value: (l) => (l.cost == null ? "–" : `$${l.cost}`) },
      ],
    })(),
};

/** The page a location hash names, as [page, arguments]. */
function route(hash) {
  const [area, id, sub] = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const nested = { dns: "zone", kv: "namespace", r2: "bucket", "ai-gateway": "gatewayLogs" };
  if (id && nested[area]) return [nested[area], [id, sub]];
  return [pages[area] ? area : "overview", []];
}

/** Counts renders, so a slow page that finishes after the user moved on does not replace the newer one. */
let renders = 0;

async function render() {
  const mine = ++renders;
  const [name, args] = route(location.hash);
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.getAttribute("href") === `#/${location.hash.split("/")[1] ?? ""}`);
  let content;
  try {
    content = (await pages[name](...args)).filter(Boolean);
  } catch (err) {
    content = [h("p", {}, err instanceof ApiFailure ? err.message : `Could not load this page: ${err.message}`)];
  }
  if (mine === renders) main.replaceChildren(...content);
}

function signInPage(message) {
  document.getElementById("nav").hidden = true;
  document.getElementById("sign-out").hidden = true;
  document.getElementById("who").textContent = "";
  const input = h("input", { name: "token", type: "password", autocomplete: "off", required: true, size: 48 });
  const f = h(
    "form",
    { name: "sign-in" },
    h("label", {}, "API token", input),
    h("button", { type: "submit" }, "Sign in"),
  );
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
    account = accounts[0];
  } catch (err) {
    sessionStorage.removeItem(TOKEN_KEY);
    return signInPage(err instanceof ApiFailure ? `Sign-in failed: ${err.message}` : `Sign-in failed: ${err.message}`);
  }
  notify("");
  document.getElementById("nav").hidden = false;
  document.getElementById("sign-out").hidden = false;
  document.getElementById("who").textContent = account.name;
  await render();
}

document.getElementById("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  account = undefined;
  location.hash = "#/";
  signInPage();
});
window.addEventListener("hashchange", () => {
  notify("");
  if (account) void render();
});
void start();
