// Building the page. Every value from the API reaches it through textContent (never as HTML), so a record, key or
// log cannot inject markup.
import { ApiFailure } from "./api.js";

const alertBox = document.getElementById("alert");
/** Draws the current page again after a change; the router sets it. */
let rerender = async () => {};
export const setRerender = (fn) => (rerender = fn);
export const rerenderPage = () => rerender();

/** Builds an element; string children become text nodes. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== false) el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}

export function notify(text, kind = "error") {
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

export const link = (text, hash) => h("a", { href: hash }, text);
export const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");

/** A byte count in binary units (1.5 KiB). */
export function formatBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

export function table(columns, rows, empty) {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  return h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        columns.map((c) => h("th", {}, c.label)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((r) =>
        h(
          "tr",
          {},
          columns.map((c) => h("td", {}, c.value(r) ?? "")),
        ),
      ),
    ),
  );
}

/** A form from field descriptions; `submit` gets the values (numbers and checkboxes typed) and may throw. */
export function form(name, fields, submitLabel, submit) {
  const inputs = fields.map((f) => {
    const input =
      f.type === "select"
        ? h(
            "select",
            { name: f.name },
            f.options.map((o) => h("option", { value: o, selected: o === f.value }, o)),
          )
        : f.type === "textarea"
          ? h("textarea", { name: f.name, rows: 3, placeholder: f.placeholder ?? "", required: f.required })
          : f.type === "checkbox"
            ? h("input", { name: f.name, type: "checkbox", checked: !!f.value })
            : h("input", { name: f.name, type: f.type ?? "text", placeholder: f.placeholder ?? "", required: f.required, value: f.value });
    return { f, input, el: h("label", {}, f.label, input) };
  });
  const el = h(
    "form",
    { name },
    inputs.map((i) => i.el),
    h("button", { type: "submit" }, submitLabel),
  );
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
      await rerender();
    }
  });
  return el;
}

/** A button that runs `action`, asking first when `confirmText` is given, then shows `doneText` and re-renders. */
export const actionButton = (label, action, { confirmText, doneText }) =>
  h(
    "button",
    {
      type: "button",
      onclick: async () => {
        if (confirmText && !confirm(confirmText)) return;
        if (await attempt(action)) {
          notify(doneText, "info");
          await rerender();
        }
      },
    },
    label,
  );

export const removeButton = (what, remove) => actionButton("Delete", remove, { confirmText: `Delete ${what}?`, doneText: `Deleted ${what}` });

/**
 * One list page: loads rows, shows them in a table, with an optional create form above it. Every list in the
 * dashboard is one of these, so they all behave alike.
 */
export function listPage({ title, load, rows: pick = (env) => env.result, columns, empty, create, extra }) {
  return async () => {
    const env = await load();
    const rows = pick(env);
    const more = hasMore(env.result_info, rows.length)
      ? h("p", { class: "muted", id: "more" }, `Showing the first ${rows.length}; edgecli and the v4 API list the rest.`)
      : null;
    return [
      h("h1", {}, title),
      create ? form(create.name, create.fields, create.label, create.submit) : null,
      extra ?? null,
      table(columns, rows, empty),
      more,
    ];
  };
}

/** Whether the API holds more than the one page it answered (counted, cursor and truncated lists alike). */
const hasMore = (info, shown) => !!info && ((info.total_count ?? 0) > shown || !!info.cursor || !!info.is_truncated);
