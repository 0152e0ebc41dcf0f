import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { optionValues } from "../core/cli/option-values.js";
import { UserError } from "../core/errors.js";
import { readDnsConfig, serveOptions } from "./config.js";

/** The DNS settings `edgecli serve` would read from these option values (the others at their defaults). */
const config = (options: Record<string, unknown>) =>
  readDnsConfig(optionValues(new Map(Object.entries(options).filter(([, v]) => v !== undefined)), serveOptions));

describe("DNS serve options", () => {
  it("reads --dns-workers: one per CPU up to 4 by default, none on one CPU, whole numbers 0-64 otherwise", () => {
    const processes = (v?: number) => config({ "name-servers": ["ns1.example"], "dns-workers": v }).answeringProcesses;
    const cpus = availableParallelism();
    assert.equal(processes(), cpus > 1 ? Math.min(cpus, 4) : 0);
    assert.equal(processes(0), 0);
    assert.equal(processes(64), 64);
    for (const bad of [-1, 2.5, 65, Number.NaN]) assert.throws(() => processes(bad), UserError, String(bad));
  });

  it("reads --dns-prewarm: 5,000 answers built ahead by default, 0 for none, whole numbers up to the caches' 50,000", () => {
    const prewarm = (v?: number) => config({ "name-servers": ["ns1.example"], "dns-prewarm": v }).prewarm;
    assert.equal(prewarm(), 5000);
    assert.equal(prewarm(0), 0);
    assert.equal(prewarm(50_000), 50_000);
    for (const bad of [-1, 2.5, 50_001, Number.NaN]) assert.throws(() => prewarm(bad), /--dns-prewarm/, String(bad));
  });

  it("reads the DNS-over-TCP limits: the declared defaults, seconds as milliseconds, nonsense refused with the option's name", () => {
    const tcp = (o: Record<string, unknown> = {}) => config({ "name-servers": ["ns1.example"], ...o }).tcp;
    const defaults = {
      maxClients: serveOptions["dns-tcp-max-clients"].default,
      maxClientsPerAddress: serveOptions["dns-tcp-max-clients-per-address"].default,
      idleTimeoutMs: serveOptions["dns-tcp-idle-timeout"].default * 1000,
      messageTimeoutMs: serveOptions["dns-tcp-message-timeout"].default * 1000,
      maxLifetimeMs: serveOptions["dns-tcp-max-lifetime"].default * 1000,
    };
    assert.deepEqual(tcp(), defaults);
    assert.equal(tcp({ "dns-tcp-message-timeout": 0.5 }).messageTimeoutMs, 500);
    assert.equal(tcp({ "dns-tcp-max-clients-per-address": 1 }).maxClientsPerAddress, 1);
    for (const [option, bad] of [
      ["dns-tcp-max-clients", 0],
      ["dns-tcp-max-clients", 2.5],
      ["dns-tcp-max-clients-per-address", -3],
      ["dns-tcp-idle-timeout", 0],
      ["dns-tcp-max-lifetime", Number.NaN],
      ["dns-tcp-message-timeout", 100_000],
    ] as const)
      assert.throws(
        () => tcp({ [option]: bad }),
        (e: unknown) => e instanceof UserError && e.message.startsWith(`--${option}:`),
        `${option} ${bad}`,
      );
  });

  it("reads --dns-max-records-per-zone (200,000 by default, whole numbers 1 to 10 million) and --dns-allow-zone (names of two labels or more, canonical)", () => {
    const max = (v?: number) => config({ "name-servers": ["ns1.example"], "dns-max-records-per-zone": v }).maxRecordsPerZone;
    assert.equal(max(), 200_000);
    assert.equal(max(1), 1);
    assert.equal(max(10_000_000), 10_000_000);
    for (const bad of [0, -1, 2.5, 10_000_001, Number.NaN]) assert.throws(() => max(bad), /--dns-max-records-per-zone/, String(bad));
    const allowed = (v?: string[]) => [...config({ "name-servers": ["ns1.example"], "dns-allow-zone": v }).allowedZones];
    assert.deepEqual(allowed(), []);
    assert.deepEqual(allowed(["DynDNS.Example.NET.", "github.io,co.uk"]), ["dyndns.example.net", "github.io", "co.uk"]);
    for (const bad of ["com", "*.github.io", "bad name.io"]) assert.throws(() => allowed([bad]), /--dns-allow-zone/, bad);
  });
});
