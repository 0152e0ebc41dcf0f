// The account's data services: D1 databases (tables, running SQL), Queues (backlog, consumers) and Durable Object
// namespaces. Every number and name comes from the public v4 API with the signed-in token, so what a page may show
// or change is what the API allows that token.
import { acct, api, ApiFailure } from "./api.js";
import { formatBytes, h, link, listPage, notify, removeButton, table, when } from "./dom.js";

const enc = encodeURIComponent;

/** The tables and views of a database (SQLite's own and D1's internal `_cf_` tables left out). */
const TABLES_SQL =
  "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name";

/** A name as an SQL identifier (double quotes, doubled inside), for the "show rows" query. */
const quoteIdent = (name) => `"${name.replaceAll('"', '""')}"`;

/** A D1 value as text: NULL shown as such, a blob by its size, everything else as it is. */
function cell(value) {
  if (value === null || value === undefined) return h("span", { class: "muted" }, "NULL");
  if (Array.isArray(value)) return h("span", { class: "muted" }, `blob, ${value.length} bytes`);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** One statement's answer of `/raw` (columns and rows as arrays: column order and repeated names kept). */
function statementResult(r, i, count) {
  const { columns, rows } = r.results ?? { columns: [], rows: [] };
  const m = r.meta ?? {};
  const summary = `${rows.length} row${rows.length === 1 ? "" : "s"} returned, ${m.rows_written ?? 0} written, ${Number(m.duration ?? 0).toFixed(2)} ms`;
  const heading = count > 1 ? h("h3", {}, `Statement ${i + 1}`) : null;
  if (columns.length === 0) return h("div", { class: "statement" }, heading, h("p", { class: "summary" }, summary));
  return h(
    "div",
    { class: "statement" },
    heading,
    h("p", { class: "summary" }, summary),
    h(
      "div",
      { class: "scroll" },
      h(
        "table",
        { class: "query-rows" },
        h("caption", { class: "visually-hidden" }, count > 1 ? `Rows of statement ${i + 1}` : "Rows returned"),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            columns.map((c) => h("th", { scope: "col" }, c)),
          ),
        ),
        h(
          "tbody",
          {},
          rows.map((row) =>
            h(
              "tr",
              {},
              row.map((v) => h("td", {}, cell(v))),
            ),
          ),
        ),
      ),
    ),
  );
}

/**
 * The SQL form of a database: runs what is typed through `POST …/raw` and shows each statement's rows, or the API's
 * error (message and code) in the result area, which a screen reader announces.
 */
function queryForm(uuid, initialSql = "") {
  const sql = h("textarea", { id: "sql", name: "sql", rows: 5, required: true, spellcheck: "false", autocomplete: "off" });
  sql.value = initialSql;
  const output = h("div", { id: "query-result", "aria-live": "polite" });
  const run = async () => {
    output.replaceChildren(h("p", { class: "muted" }, "Running…"));
    try {
      const env = await api("POST", acct(`/d1/database/${enc(uuid)}/raw`), { sql: sql.value });
      output.replaceChildren(...env.result.map((r, i) => statementResult(r, i, env.result.length)));
      notify("");
    } catch (err) {
      const message = err instanceof ApiFailure ? err.message : `Request failed: ${err.message}`;
      output.replaceChildren(h("p", { class: "error", role: "alert", id: "query-error" }, `The query failed: ${message}`));
    }
  };
  const f = h("form", { name: "query" }, h("label", { class: "wide" }, "SQL (one or more statements)", sql), h("button", { type: "submit" }, "Run"));
  f.addEventListener("submit", (e) => {
    e.preventDefault();
    void run();
  });
  return { el: h("section", { "aria-labelledby": "query-title" }, h("h2", { id: "query-title" }, "Run a query"), f, output), run, sql };
}

export const dataPages = {
  d1: listPage({
    title: "D1 databases",
    empty: "No databases yet.",
    load: () => api("GET", acct("/d1/database?per_page=100")),
    columns: [
      { label: "Database", value: (d) => link(d.name, `#/d1/${enc(d.uuid)}`) },
      { label: "Id", value: (d) => d.uuid },
      { label: "Size", value: (d) => formatBytes(d.file_size ?? 0) },
      { label: "Created", value: (d) => when(d.created_at) },
      { label: "", value: (d) => removeButton(`database ${d.name}`, () => api("DELETE", acct(`/d1/database/${enc(d.uuid)}`))) },
    ],
    create: {
      name: "create-database",
      label: "Create database",
      fields: [{ name: "name", label: "Name", placeholder: "my-database", required: true }],
      submit: (v) => api("POST", acct("/d1/database"), { name: v.name }),
    },
  }),

  async database(uuid) {
    const db = (await api("GET", acct(`/d1/database/${enc(uuid)}`))).result;
    const query = queryForm(uuid);
    // Listing tables is a query too: a token with D1 read only gets the API's refusal here, the rest of the page stays.
    let tables;
    try {
      const rows = (await api("POST", acct(`/d1/database/${enc(uuid)}/query`), { sql: TABLES_SQL })).result[0].results;
      tables = table(
        [
          { label: "Name", value: (t) => t.name },
          { label: "Kind", value: (t) => t.type },
          {
            label: "",
            value: (t) =>
              h(
                "button",
                {
                  type: "button",
                  "aria-label": `Show rows of ${t.name}`,
                  onclick: () => {
                    query.sql.value = `SELECT * FROM ${quoteIdent(t.name)} LIMIT 100`;
                    void query.run();
                  },
                },
                "Show rows",
              ),
          },
        ],
        rows,
        "No tables yet.",
      );
    } catch (err) {
      tables = h("p", { class: "muted", id: "tables-refused" }, `Tables are not listed: ${err.message}`);
    }
    return [
      h("h1", {}, `Database ${db.name}`),
      h("p", { class: "muted" }, `Id ${db.uuid} · ${formatBytes(db.file_size ?? 0)} · ${db.num_tables ?? 0} tables · created ${when(db.created_at)}`),
      h("section", { "aria-labelledby": "tables-title" }, h("h2", { id: "tables-title" }, "Tables"), tables),
      query.el,
    ];
  },

  queues: listPage({
    title: "Queues",
    empty: "No queues yet.",
    load: async () => {
      const env = await api("GET", acct("/queues?per_page=100"));
      // The backlog is the hosted per-queue metrics call (best effort there too): one that fails leaves its row blank.
      const metrics = await Promise.all(
        env.result.map((q) =>
          api("GET", acct(`/queues/${enc(q.queue_id)}/metrics`)).then(
            (m) => m.result,
            () => undefined,
          ),
        ),
      );
      metrics.forEach((m, i) => (env.result[i].metrics = m));
      return env;
    },
    columns: [
      { label: "Queue", value: (q) => q.queue_name },
      { label: "Backlog", value: (q) => (q.metrics ? `${q.metrics.backlog_count} messages, ${formatBytes(q.metrics.backlog_bytes)}` : "–") },
      { label: "Oldest message", value: (q) => (q.metrics?.oldest_message_timestamp_ms ? when(q.metrics.oldest_message_timestamp_ms) : "–") },
      { label: "Consumers", value: (q) => q.consumers.map(describeConsumer).join("; ") || "none" },
      { label: "Producers", value: (q) => q.producers.map((p) => p.script).join(", ") || "none" },
      { label: "Delivery", value: (q) => (q.settings?.delivery_paused ? "paused" : "on") },
      { label: "", value: (q) => removeButton(`queue ${q.queue_name}`, () => api("DELETE", acct(`/queues/${enc(q.queue_id)}`))) },
    ],
    create: {
      name: "create-queue",
      label: "Create queue",
      fields: [{ name: "queue_name", label: "Name", placeholder: "my-queue", required: true }],
      submit: (v) => api("POST", acct("/queues"), { queue_name: v.queue_name }),
    },
  }),

  "durable-objects": listPage({
    title: "Durable Object namespaces",
    empty: "No Durable Object namespaces. A Worker's [[migrations]] create them (docs/workers.md).",
    load: () => api("GET", acct("/workers/durable_objects/namespaces?per_page=100")),
    columns: [
      { label: "Namespace", value: (n) => link(n.name, `#/durable-objects/${enc(n.id)}`) },
      { label: "Worker", value: (n) => n.script },
      { label: "Class", value: (n) => n.class },
      { label: "Storage", value: (n) => (n.use_sqlite ? "SQLite" : "key-value") },
      { label: "Id", value: (n) => n.id },
    ],
  }),

  async doObjects(nsId) {
    const namespaces = (await api("GET", acct("/workers/durable_objects/namespaces?per_page=1000"))).result;
    const ns = namespaces.find((n) => n.id === nsId);
    return listPage({
      title: `Objects of ${ns ? ns.name : nsId}`,
      empty: "No object of this namespace has stored data.",
      load: () => api("GET", acct(`/workers/durable_objects/namespaces/${enc(nsId)}/objects?limit=1000`)),
      columns: [
        { label: "Object id", value: (o) => o.id },
        { label: "Stored data", value: (o) => (o.hasStoredData ? "yes" : "no") },
      ],
    })();
  },
};

/** A consumer in words: the Worker it runs (or HTTP pull) and its batch settings. */
function describeConsumer(c) {
  const s = c.settings ?? {};
  const who = c.type === "http_pull" ? "HTTP pull" : `Worker ${c.script_name ?? c.script}`;
  const dlq = c.dead_letter_queue ? `, dead letters to ${c.dead_letter_queue}` : "";
  return `${who} (batch ${s.batch_size ?? "–"}, ${s.max_retries ?? "–"} retries${dlq})`;
}

/** Hashes `#/<area>/<id>` routed to the page of one item. */
export const dataNested = { d1: "database", "durable-objects": "doObjects" };
