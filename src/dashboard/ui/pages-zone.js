// A zone's edge pages: its settings (/zones/{id}/settings), cache purge (/zones/{id}/purge_cache) and certificates
// (/zones/{id}/ssl/certificate_packs and /zones/{id}/custom_certificates). Each area first lists the account's zones
// to choose one; everything shown or changed goes through the public v4 API with the signed-in token.
import { api, session } from "./api.js";
import { actionButton, form, h, link, listPage, notify, removeButton, rerenderPage, table, when } from "./dom.js";

const enc = encodeURIComponent;
const ON_OFF = ["on", "off"];

/** Browser Cache TTL choices of the hosted platform, in seconds (0: the origin's headers decide). */
const BROWSER_CACHE_TTLS = [
  0, 30, 60, 120, 300, 1200, 1800, 3600, 7200, 10800, 14400, 18000, 28800, 43200, 57600, 72000, 86400, 172800, 259200, 345600, 432000, 691200, 1382400, 2073600,
  2678400, 5356800, 16070400, 31536000,
];

/**
 * What the page knows of each setting: its hosted title and the values the hosted API takes. A setting the API lists
 * that is not here is still shown and edited, as text. (A Map: setting ids come from the API.)
 */
const SETTINGS = new Map([
  ["always_use_https", { title: "Always Use HTTPS", choices: ON_OFF }],
  ["browser_cache_ttl", { title: "Browser Cache TTL", choices: BROWSER_CACHE_TTLS }],
  ["cache_level", { title: "Caching level", choices: ["aggressive", "basic", "simplified"] }],
  ["development_mode", { title: "Development Mode", choices: ON_OFF }],
  ["http2", { title: "HTTP/2", choices: ON_OFF }],
  ["ipv6", { title: "IPv6", choices: ON_OFF }],
  ["min_tls_version", { title: "Minimum TLS version", choices: ["1.0", "1.1", "1.2", "1.3"] }],
  ["ssl", { title: "SSL/TLS encryption mode", choices: ["off", "flexible", "full", "strict"] }],
  ["tls_1_3", { title: "TLS 1.3", choices: ON_OFF }],
  ["websockets", { title: "WebSockets", choices: ON_OFF }],
]);

/** Seconds in words, as the hosted dashboard names the Browser Cache TTL choices. */
function duration(seconds) {
  if (seconds === 0) return "Respect existing headers";
  for (const [size, unit] of [
    [31536000, "year"],
    [86400, "day"],
    [3600, "hour"],
    [60, "minute"],
  ])
    if (seconds % size === 0) return `${seconds / size} ${unit}${seconds === size ? "" : "s"}`;
  return `${seconds} seconds`;
}

/** The account's zones, each linking to `area`'s page of that zone. */
const zonePicker = (title, area, says) =>
  listPage({
    title,
    empty: "No zones yet. Add one on the DNS page.",
    load: () => api("GET", `/zones?account.id=${enc(session.account.id)}&per_page=50`),
    extra: h("p", { class: "muted" }, says),
    columns: [
      { label: "Zone", value: (z) => link(z.name, `#/${area}/${enc(z.id)}`) },
      { label: "Status", value: (z) => z.status },
    ],
  });

/** The zone a page is about (404 of the API for a zone the token cannot see). */
const zoneOf = async (zoneId) => (await api("GET", `/zones/${enc(zoneId)}`)).result;

/** One setting's control: a list of the hosted values, or a text field for a setting the page does not know. */
function settingControl(s) {
  const known = SETTINGS.get(s.id);
  const id = `setting-${s.id}`;
  const disabled = s.editable === false;
  if (!known) return h("input", { id, name: s.id, value: String(s.value), disabled, "data-kind": typeof s.value });
  const choices = known.choices.includes(s.value) ? known.choices : [s.value, ...known.choices];
  return h(
    "select",
    { id, name: s.id, disabled, "data-kind": typeof s.value },
    choices.map((c) => h("option", { value: String(c), selected: c === s.value }, s.id === "browser_cache_ttl" ? duration(c) : String(c))),
  );
}

/** What a setting's row says beside the control: read-only, development mode's time left, when it last changed. */
function settingNote(s) {
  const notes = [];
  if (s.editable === false) notes.push("read-only here");
  if (s.id === "development_mode" && s.time_remaining > 0) notes.push(`${Math.ceil(s.time_remaining / 60)} minutes left`);
  notes.push(s.modified_on ? `changed ${when(s.modified_on)}` : "default");
  return notes.join(" · ");
}

/** The settings form: one row per setting, Save sends the changed ones in one PATCH (all or none are written). */
function settingsForm(zoneId, settings) {
  const controls = settings.map((s) => ({ s, control: settingControl(s) }));
  const el = h(
    "form",
    { name: "zone-settings", class: "settings" },
    h(
      "table",
      {},
      h("caption", { class: "visually-hidden" }, "Zone settings"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Setting"), h("th", { scope: "col" }, "Value"), h("th", { scope: "col" }, "Notes"))),
      h(
        "tbody",
        {},
        controls.map(({ s, control }) =>
          h(
            "tr",
            { "data-setting": s.id },
            h("th", { scope: "row" }, h("label", { for: control.id }, SETTINGS.get(s.id)?.title ?? s.id), h("code", {}, s.id)),
            h("td", {}, control),
            h("td", { class: "muted" }, settingNote(s)),
          ),
        ),
      ),
    ),
    h("button", { type: "submit" }, "Save changes"),
  );
  el.addEventListener("submit", async (e) => {
    e.preventDefault();
    const items = [];
    for (const { s, control } of controls) {
      if (control.disabled) continue;
      const value = control.dataset.kind === "number" ? Number(control.value) : control.value;
      if (value !== s.value) items.push({ id: s.id, value });
    }
    if (items.length === 0) return notify("Nothing changed.", "info");
    try {
      await api("PATCH", `/zones/${enc(zoneId)}/settings`, { items });
    } catch (err) {
      return notify(err.message);
    }
    notify(`Saved: ${items.map((i) => i.id).join(", ")}`, "info");
    await rerenderPage();
  });
  return el;
}

/** The lines of a textarea: trimmed, blank ones left out. */
const lines = (text) =>
  text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);

/** The purge forms: one per kind of the hosted purge_cache body, with examples in the zone. */
const purges = (zone) => [
  { kind: "files", name: "purge-urls", title: "By URL", label: "URLs", placeholder: `https://www.${zone}/app.js`, button: "Purge URLs" },
  { kind: "tags", name: "purge-tags", title: "By cache tag", label: "Cache tags", placeholder: "product-42", button: "Purge tags" },
  { kind: "hosts", name: "purge-hosts", title: "By host", label: "Hosts", placeholder: `images.${zone}`, button: "Purge hosts" },
  {
    kind: "prefixes",
    name: "purge-prefixes",
    title: "By prefix",
    label: "Prefixes (host and path)",
    placeholder: `www.${zone}/images/`,
    button: "Purge prefixes",
  },
];

export const zonePages = {
  "zone-settings": zonePicker("Zone settings", "zone-settings", "Choose a zone to see and change its settings."),
  cache: zonePicker("Cache", "cache", "Choose a zone to purge its cached content."),
  certificates: zonePicker("Certificates", "certificates", "Choose a zone to see its certificates and upload your own."),

  async zoneSettings(zoneId) {
    const zone = await zoneOf(zoneId);
    const settings = (await api("GET", `/zones/${enc(zoneId)}/settings`)).result;
    return [
      h("h1", {}, `Settings of ${zone.name}`),
      h("p", { class: "muted" }, "Settings marked read-only are not applied by this platform yet; they show the value the zone gets."),
      settingsForm(zoneId, settings),
    ];
  },

  async zoneCache(zoneId) {
    const zone = await zoneOf(zoneId);
    const purge = (body) => api("POST", `/zones/${enc(zoneId)}/purge_cache`, body);
    return [
      h("h1", {}, `Cache of ${zone.name}`),
      h(
        "p",
        { class: "muted" },
        "A purge removes cached answers on every node before it is confirmed. One per line, up to 100 per purge; URLs and hosts must be in this zone.",
      ),
      h(
        "section",
        { "aria-labelledby": "purge-all-title" },
        h("h2", { id: "purge-all-title" }, "Everything"),
        actionButton("Purge everything", () => purge({ purge_everything: true }), {
          confirmText: `Purge everything cached for ${zone.name}?`,
          doneText: `Purged everything cached for ${zone.name}`,
        }),
      ),
      ...purges(zone.name).map((p) =>
        h(
          "section",
          { "aria-labelledby": `${p.name}-title` },
          h("h2", { id: `${p.name}-title` }, p.title),
          form(p.name, [{ name: "items", label: `${p.label}, one per line`, type: "textarea", placeholder: p.placeholder, required: true }], p.button, (v) =>
            purge({ [p.kind]: lines(v.items) }),
          ),
        ),
      ),
    ];
  },

  async zoneCertificates(zoneId) {
    const zone = await zoneOf(zoneId);
    let packs;
    let custom;
    try {
      [packs, custom] = await Promise.all([
        api("GET", `/zones/${enc(zoneId)}/ssl/certificate_packs?per_page=50`),
        api("GET", `/zones/${enc(zoneId)}/custom_certificates?per_page=50`),
      ]);
    } catch (err) {
      // The certificate routes exist only when the platform serves HTTPS (its "No route" answer, code 7000).
      if (!/\(code 7000\)/.test(err.message)) throw err;
      return [
        h("h1", {}, `Certificates of ${zone.name}`),
        h("p", { id: "no-tls" }, "This platform serves no HTTPS (it was started without --edge-tls-port): it has no certificates to show or upload."),
      ];
    }
    return [
      h("h1", {}, `Certificates of ${zone.name}`),
      h(
        "section",
        { "aria-labelledby": "packs-title" },
        h("h2", { id: "packs-title" }, "Edge certificates"),
        table(
          [
            { label: "Type", value: (p) => p.type },
            { label: "Hosts", value: (p) => p.hosts.join(", ") },
            { label: "Status", value: (p) => p.status },
            { label: "Authority", value: (p) => p.certificate_authority },
            { label: "Expires", value: (p) => when(p.certificates?.[0]?.expires_on) || "–" },
            { label: "Last error", value: (p) => p.validation_errors?.map((e) => e.message).join("; ") || "–" },
          ],
          packs.result,
          "No edge certificate: the platform orders one once a name of the zone is proxied.",
        ),
      ),
      h(
        "section",
        { "aria-labelledby": "custom-title" },
        h("h2", { id: "custom-title" }, "Custom certificates"),
        table(
          [
            { label: "Hosts", value: (c) => c.hosts.join(", ") },
            { label: "Issuer", value: (c) => c.issuer },
            { label: "Status", value: (c) => c.status },
            { label: "Expires", value: (c) => when(c.expires_on) },
            { label: "Bundle", value: (c) => c.bundle_method },
            { label: "Uploaded", value: (c) => when(c.uploaded_on) },
            {
              label: "",
              value: (c) =>
                removeButton(`the certificate for ${c.hosts.join(", ")}`, () => api("DELETE", `/zones/${enc(zoneId)}/custom_certificates/${enc(c.id)}`)),
            },
          ],
          custom.result,
          "No custom certificates.",
        ),
        h("h3", {}, "Upload a certificate"),
        h("p", { class: "muted" }, "The private key is sent once and never shown again, here or by the API."),
        form(
          "upload-certificate",
          [
            { name: "certificate", label: "Certificate (PEM, with its chain)", type: "textarea", placeholder: "-----BEGIN CERTIFICATE-----", required: true },
            { name: "private_key", label: "Private key (PEM)", type: "textarea", placeholder: "-----BEGIN PRIVATE KEY-----", required: true },
            { name: "bundle_method", label: "Bundle method", type: "select", options: ["ubiquitous", "optimal", "force"], value: "ubiquitous" },
          ],
          "Upload certificate",
          (v) => api("POST", `/zones/${enc(zoneId)}/custom_certificates`, v),
        ),
      ),
    ];
  },
};

/** Hashes `#/<area>/<zone id>` routed to the page of that zone. */
export const zoneNested = { "zone-settings": "zoneSettings", cache: "zoneCache", certificates: "zoneCertificates" };
