// The pages of the dashboard, each an async function returning the nodes it shows.
import { acct, api, session } from "./api.js";
import { dnsQueriesChart, gatewayUsageChart, workerInvocationsChart, zoneTrafficChart } from "./charts.js";
import { actionButton, form, h, link, listPage, removeButton, rerenderPage as render, table, when } from "./dom.js";

const enc = encodeURIComponent;

/** A chart, or why there is none (it needs analytics_read: the page shows the rest without it). */
const chartOr = (chart, id, what) => chart.catch((err) => h("p", { class: "muted", id }, `No ${what} chart: ${err.message}`));

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
        actionButton(
          g.authentication ? "Turn off" : "Turn on",
          () => api("PUT", acct(`/ai-gateway/gateways/${g.id}`), { ...g, authentication: !g.authentication }),
          {
            doneText: `Authentication of ${g.id} is ${g.authentication ? "off" : "on"}`,
          },
        ),
      ],
    },
    { label: "Logs", value: (g) => (g.collect_logs ? "collected" : "off") },
    { label: "Cache TTL", value: (g) => (g.cache_ttl ? `${g.cache_ttl} s` : "off") },
    {
      label: "Rate limit",
      value: (g) => (g.rate_limiting_limit ? `${g.rate_limiting_limit} / ${g.rate_limiting_interval} s (${g.rate_limiting_technique})` : "off"),
    },
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
    submit: (v) =>
      api("POST", acct("/ai-gateway/gateways"), {
        ...v,
        cache_ttl: 0,
        cache_invalidate_on_update: false,
        rate_limiting_interval: 0,
        rate_limiting_limit: 0,
        rate_limiting_technique: "fixed",
      }),
  },
});

const RECORD_TYPES = ["A", "AAAA", "CNAME", "TXT", "MX", "NS", "CAA", "SRV", "PTR"];
/** The DNS record the zone page shows in its editor on its next render. */
let editing;

/** A new token's value, shown once on the next render of the gateway page and then forgotten. */
let newToken;

/**
 * API tokens with only the AI Gateway Run permission (what this page creates): what clients send in
 * gw-aig-authorization. Broader tokens of the account (the bootstrap token among them) are not gateway tokens.
 */
async function gatewayTokens() {
  const all = (await api("GET", acct("/tokens?per_page=50"))).result;
  const run = all.filter((t) => t.policies.every((p) => p.permission_groups.every((g) => g.id === "ai_gateway_run")));
  const shown = newToken;
  newToken = undefined;
  return [
    h("h2", {}, "Gateway tokens"),
    h(
      "p",
      { class: "muted" },
      "Clients send one as gw-aig-authorization: Bearer <token> (SDKs: the default header gw-aig-token). Send it on every request first, then turn authentication on.",
    ),
    shown
      ? h("div", { id: "new-token" }, h("p", {}, `Token ${shown.name} created. Copy the value now: it is not shown again.`), h("pre", {}, shown.value))
      : null,
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
            actionButton("Revoke", () => api("DELETE", acct(`/tokens/${t.id}`)), {
              confirmText: `Revoke token ${t.name}? Requests that send it are refused at once.`,
              doneText: `Revoked ${t.name}`,
            }),
        },
      ],
      run,
      "No gateway tokens yet.",
    ),
  ];
}

/** A binding as the Workers page lists it: its name and what it is, never a value. */
const describeBinding = (b) =>
  `${b.name} (${{ r2_bucket: `R2 bucket ${b.bucket_name}`, kv_namespace: `KV namespace ${b.namespace_id}`, plain_text: "variable", secret_text: "secret" }[b.type] ?? b.type})`;

export const pages = {
  async overview() {
    const counts = await Promise.all([
      api("GET", `/zones?account.id=${session.account.id}&per_page=1`).then((e) => e.result_info?.total_count ?? e.result.length),
      api("GET", acct("/storage/kv/namespaces?per_page=1")).then((e) => e.result_info?.total_count ?? e.result.length),
      api("GET", acct("/r2/buckets")).then((e) => e.result.buckets.length),
      api("GET", acct("/workers/scripts")).then((e) => e.result.length),
      api("GET", acct("/ai-gateway/gateways?per_page=1")).then((e) => e.result_info?.total_count ?? e.result.length),
    ]);
    const names = ["DNS zones", "KV namespaces", "R2 buckets", "Worker scripts", "AI gateways"];
    const hashes = ["#/dns", "#/kv", "#/r2", "#/workers", "#/ai-gateway"];
    return [
      h("h1", {}, session.account.name),
      h("p", { class: "muted" }, `Account ${session.account.id}`),
      h(
        "div",
        { class: "cards" },
        names.map((n, i) => h("a", { class: "card", href: hashes[i], "data-count": n }, h("div", { class: "n" }, counts[i]), n)),
      ),
    ];
  },

  dns: listPage({
    title: "DNS zones",
    empty: "No zones yet.",
    load: () => api("GET", `/zones?account.id=${session.account.id}&per_page=50`),
    columns: [
      { label: "Zone", value: (z) => link(z.name, `#/dns/${z.id}`) },
      { label: "Status", value: (z) => z.status },
      { label: "Name servers", value: (z) => z.name_servers.join(", ") },
      { label: "", value: (z) => removeButton(`zone ${z.name}`, () => api("DELETE", `/zones/${z.id}`)) },
    ],
    create: {
      name: "create-zone",
      label: "Add zone",
      fields: [{ name: "name", label: "Domain", placeholder: "example.com", required: true }],
      submit: (v) => api("POST", "/zones", { name: v.name, account: { id: session.account.id } }),
    },
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
    // The chart needs analytics_read: without it the page still shows the records, and says why there is no chart.
    const traffic = await zoneTrafficChart(zoneId).catch((err) => h("p", { class: "muted", id: "traffic-summary" }, `No traffic chart: ${err.message}`));
    const queries = await chartOr(dnsQueriesChart(zoneId), "dns-queries-summary", "DNS queries");
    return listPage({
      title: `DNS records of ${zone.name}`,
      empty: "No records yet.",
      extra: h("div", {}, traffic, queries, editor),
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
    create: {
      name: "create-namespace",
      label: "Create namespace",
      fields: [{ name: "title", label: "Title", required: true }],
      submit: (v) => api("POST", acct("/storage/kv/namespaces"), v),
    },
  }),

  async namespace(nsId, key) {
    const base = acct(`/storage/kv/namespaces/${nsId}`);
    const value =
      key === undefined
        ? null
        : h("div", {}, h("h2", {}, `Value of ${key}`), h("pre", { id: "kv-value" }, await api("GET", `${base}/values/${enc(key)}`, undefined, true)));
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
    create: {
      name: "create-bucket",
      label: "Create bucket",
      fields: [{ name: "name", label: "Name", placeholder: "my-bucket", required: true }],
      submit: (v) => api("POST", acct("/r2/buckets"), v),
    },
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
        {
          label: "",
          value: (o) => removeButton(`object ${o.key}`, () => api("DELETE", acct(`/r2/buckets/${name}/objects/${o.key.split("/").map(enc).join("/")}`))),
        },
      ],
    })(),

  async workers() {
    const domain = (await api("GET", acct("/workers/subdomain"))).result.subdomain;
    const port = location.port ? `:${location.port}` : "";
    const invocations = await chartOr(workerInvocationsChart(session.account.id), "invocations-summary", "invocations");
    return listPage({
      title: "Worker scripts",
      extra: invocations,
      empty: "No scripts deployed. Deploy one with `edgecli deploy` (docs/workers.md).",
      load: async () => {
        const env = await api("GET", acct("/workers/scripts"));
        const settings = await Promise.all(env.result.map((s) => api("GET", acct(`/workers/scripts/${s.id}/settings`))));
        settings.forEach((st, i) => (env.result[i].bindings = st.result.bindings));
        return env;
      },
      columns: [
        { label: "Script", value: (s) => s.id },
        { label: "Logs", value: (s) => link("Logs", `#/worker-logs/${enc(s.id)}`) },
        { label: "URL", value: (s) => `${location.protocol}//${s.id}.${domain}${port}/` },
        { label: "Bindings", value: (s) => s.bindings.map(describeBinding).join(", ") || "none" },
        { label: "Modified", value: (s) => when(s.modified_on) },
        { label: "", value: (s) => removeButton(`script ${s.id}`, () => api("DELETE", acct(`/workers/scripts/${s.id}`))) },
      ],
    })();
  },

  "ai-gateway": async () => [
    ...(await gatewaysPage()),
    await chartOr(gatewayUsageChart(session.account.id), "gateway-usage-summary", "tokens and cost"),
    ...(await gatewayTokens()),
  ],

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
