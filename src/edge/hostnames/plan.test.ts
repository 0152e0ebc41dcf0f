import assert from "node:assert/strict";
import { test } from "node:test";
import { EdgeError } from "../../core/errors.js";
import { readEdgeConfig } from "../config.js";
import { normalizeHostname } from "./names.js";
import { Hostnames } from "./plan.js";

const defaults = {
  s3Host: "r2.localhost",
  workersDomain: "workers.localhost",
  nameServers: ["ns1.edge-platform.test", "ns2.edge-platform.test"],
  listenHost: "127.0.0.1",
};
const tenantZones = ["shop.example", "b.example"];
const isTenant = (h: string) => tenantZones.some((z) => h === z || h.endsWith(`.${z}`));
const planOf = (options: { "api-hostname"?: string[]; "dashboard-hostname"?: string } = {}) =>
  new Hostnames(readEdgeConfig({ "api-hostname": ["localhost"], "dashboard-hostname": undefined, ...options }, defaults).plan, isTenant);

test("Host is normalised once: lower case, without port or trailing dot", () => {
  assert.equal(normalizeHostname("WWW.Shop.Example.:8443"), "www.shop.example");
  assert.equal(normalizeHostname("[::1]:8787"), "::1");
  assert.equal(normalizeHostname("127.0.0.1:8787"), "127.0.0.1");
  assert.equal(normalizeHostname(undefined), "");
});

test("classify: platform (which service), tenant or unknown; loopback keeps the API as the default", () => {
  const h = planOf({ "api-hostname": ["api.edge.internal"], "dashboard-hostname": "dash.edge.internal" });
  const kind = (host: string | undefined, loopback = false) => {
    const c = h.classify(host, loopback);
    return c.kind === "platform" ? c.service : c.kind;
  };
  assert.equal(kind("API.edge.internal.:443"), "api");
  assert.equal(kind("dash.edge.internal"), "dashboard");
  assert.equal(kind("127.0.0.1:8787"), "api");
  assert.equal(kind("[::1]:8787"), "api");
  assert.equal(kind(undefined), "api");
  assert.equal(kind("r2.localhost"), "s3");
  assert.equal(kind("bucket.0123456789abcdef0123456789abcdef.r2.localhost"), "s3");
  assert.equal(kind("app.workers.localhost"), "workers");
  assert.equal(kind("ns1.edge-platform.test"), "reserved");
  assert.equal(kind("other.edge-platform.test"), "reserved");
  assert.equal(kind("x.api.edge.internal"), "reserved");
  assert.equal(kind("www.shop.example"), "tenant");
  assert.equal(kind("nowhere.example"), "unknown");
  assert.equal(kind("nowhere.example", true), "api");
  // A tenant's zone over a platform name (made before the plan changed) does not take it: the platform's wins.
  tenantZones.push("workers.localhost");
  assert.equal(kind("app.workers.localhost"), "workers");
  tenantZones.pop();
});

test("refuse: at or under a platform hostname (a zone: above one too), with a 400 naming it", () => {
  const h = planOf({ "api-hostname": ["api.edge.internal"] });
  const refusal = (use: Parameters<Hostnames["refuse"]>[0], name: string) => {
    try {
      h.refuse(use, name);
      return undefined;
    } catch (e) {
      assert.ok(e instanceof EdgeError);
      assert.equal(e.status, 400);
      return e.message;
    }
  };
  assert.match(refusal("zone", "r2.localhost")!, /r2\.localhost cannot be used for a zone: it is r2\.localhost, the platform's own S3 API hostname/);
  assert.match(refusal("zone", "edge.internal")!, /above api\.edge\.internal/);
  assert.match(refusal("zone", "edge-platform.test")!, /name servers'/);
  assert.match(refusal("DNS record", "ns1.edge-platform.test")!, /under edge-platform\.test|it is edge-platform/);
  assert.match(refusal("Custom Domain", "A.R2.localhost.")!, /under r2\.localhost/);
  assert.match(refusal("route", "x.workers.localhost")!, /workers domain/);
  assert.equal(refusal("zone", "shop.example"), undefined);
  assert.equal(refusal("DNS record", "internal.example"), undefined);
  // A record above a platform name is a name of a zone that could not be created; only zones are refused above.
  assert.equal(refusal("DNS record", "internal"), undefined);
  assert.equal(h.isPlatformHostname("a.b.r2.localhost"), true);
  assert.equal(h.isPlatformHostname("r2.localhost.example"), false);
});

test("options: host names are checked; the listen address's name is an API hostname", () => {
  assert.throws(() => readEdgeConfig({ "api-hostname": ["not a name"], "dashboard-hostname": undefined }, defaults), /--api-hostname must be a host name/);
  assert.throws(() => readEdgeConfig({ "api-hostname": ["10.0.0.1"], "dashboard-hostname": undefined }, defaults), /--api-hostname/);
  const plan = readEdgeConfig({ "api-hostname": ["a.example,b.example"], "dashboard-hostname": " " }, { ...defaults, listenHost: "edge.lan" }).plan;
  assert.deepEqual(plan.apiHostnames, ["a.example", "b.example", "edge.lan"]);
  assert.equal(plan.dashboardHostname, undefined);
});
