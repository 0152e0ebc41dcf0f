import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { EdgeError, UserError } from "../core/errors.js";
import { readDnsConfig, TCP_LIMIT_OPTIONS } from "./config.js";
import { importZone } from "./bind.js";
import { rnameFromInput } from "./soa.js";
import { parseSvcParams, ipv6Bytes } from "./svcb.js";
import { parseTxt, txtWireStrings, unquotedTxt } from "./txt.js";
import { resolveRecordName } from "./names.js";
import type { DnsRecord } from "./model.js";
import type { ZoneDraft } from "./state.js";

describe("DNS building blocks", () => {
  it("parses TXT content and refuses inconsistent quotes", () => {
    assert.deepEqual(parseTxt("plain text"), { strings: ["plain text"], content: '"plain text"' });
    assert.deepEqual(parseTxt('"a b" "c\\"d"').strings, ["a b", 'c"d']);
    for (const bad of ['"open', 'close"', '"a"b', 'x "a"', '"a" "b']) assert.throws(() => parseTxt(bad), EdgeError, bad);
    assert.equal(unquotedTxt('"tok" "en"'), "token");
    assert.deepEqual(
      txtWireStrings(["y".repeat(600)]).map((b) => b.length),
      [255, 255, 90],
    );
  });

  it("converts RNAME from e-mail form as the spec says", () => {
    assert.equal(rnameFromInput("hostmaster@example.com"), "hostmaster.example.com");
    assert.equal(rnameFromInput("first.last@example.com"), "first\\.last.example.com");
    assert.equal(rnameFromInput("first\\.last.example.com."), "first\\.last.example.com");
    assert.equal(rnameFromInput("nodots"), undefined);
    assert.equal(rnameFromInput("a@b@"), undefined);
  });

  it("reads SvcParams and refuses bad ones", () => {
    const p = parseSvcParams('port=443 alpn="h3,h2" ipv6hint=2001:db8::1 ipv4hint=192.0.2.1,192.0.2.2');
    assert.deepEqual(
      p.map((x) => x.key),
      [1, 3, 4, 6],
      "sorted by key",
    );
    assert.deepEqual([...p[0].value], [2, 0x68, 0x33, 2, 0x68, 0x32]);
    assert.equal(p[2].value.length, 8);
    for (const bad of ["alpn", "port=70000", "ipv4hint=::1", "bogus=1", "port=1 port=2", "ech=", 'alpn="h2'])
      assert.throws(() => parseSvcParams(bad), Error, bad);
    assert.equal(ipv6Bytes("2001:db8::1").toString("hex"), "20010db8000000000000000000000001");
    assert.equal(ipv6Bytes("::ffff:192.0.2.1").toString("hex"), "00000000000000000000ffffc0000201");
  });

  it("resolves record names: @, relative, absolute with or without the dot, Unicode to punycode", () => {
    assert.equal(resolveRecordName("@", "example.com"), "example.com");
    assert.equal(resolveRecordName("www", "example.com"), "www.example.com");
    assert.equal(resolveRecordName("WWW.Example.com", "example.com"), "www.example.com");
    assert.equal(resolveRecordName("www.example.com.", "example.com"), "www.example.com");
    assert.equal(resolveRecordName("bücher", "example.com"), "xn--bcher-kva.example.com");
    assert.throws(() => resolveRecordName("www.other.org.", "example.com"), EdgeError);
  });

  it("reads zone files: $ORIGIN, $TTL, blank owners, parentheses, comments, the proxied tag", () => {
    const added: Record<string, unknown>[] = [];
    const draft = { zone: { zone: { name: "example.com" } } } as unknown as ZoneDraft;
    const text = [
      "$TTL 1h",
      "@ IN SOA ns1.example.com. admin.example.com. ( 1 7200 3600 1209600 300 ) ; the SOA is the platform's",
      "@ IN NS ns1.example.com.",
      "www 300 IN A 203.0.113.1 ; cf_tags=cf-proxied:true",
      "    IN AAAA 2001:db8::1",
      "$ORIGIN sub.example.com.",
      "mail IN 600 MX 10 mx",
      'txt IN TXT "a;b" "c"',
      "_sip._tcp IN SRV 1 2 5060 sip.example.com.",
    ].join("\n");
    const res = importZone(text, draft, false, (b) => {
      added.push(b);
      return b as unknown as DnsRecord;
    });
    assert.deepEqual(res, { recs_added: 5, total_records_parsed: 5 });
    assert.deepEqual(added[0], { type: "A", name: "www.example.com.", ttl: 300, proxied: true, content: "203.0.113.1" });
    assert.deepEqual(added[1], { type: "AAAA", name: "www.example.com.", ttl: 3600, proxied: false, content: "2001:db8::1" });
    assert.deepEqual(added[2], { type: "MX", name: "mail.sub.example.com.", ttl: 600, proxied: false, priority: 10, content: "mx.sub.example.com" });
    assert.equal(added[3].content, '"a;b" "c"');
    assert.deepEqual(added[4].data, { priority: "1", weight: "2", port: "5060", target: "sip.example.com" });
    const chained = (re: RegExp) => (e: unknown) => e instanceof EdgeError && re.test(e.errors[0].error_chain?.[0]?.message ?? "");
    assert.throws(() => importZone("x IN A (1.2.3.4\n", draft, false, () => ({}) as DnsRecord), chained(/line 1: unbalanced parentheses/));
    assert.throws(() => importZone("$INCLUDE other.zone\n", draft, false, () => ({}) as DnsRecord), chained(/unsupported directive/));
  });

  it("reads --dns-workers: one per CPU up to 4 by default, none on one CPU, whole numbers 0-64 otherwise", () => {
    const workers = (v?: unknown) => readDnsConfig({ "name-servers": ["ns1.example"], "dns-workers": v }).workers;
    const cpus = availableParallelism();
    assert.equal(workers(), cpus > 1 ? Math.min(cpus, 4) : 0);
    assert.equal(workers(0), 0);
    assert.equal(workers(64), 64);
    for (const bad of [-1, 2.5, 65, Number.NaN]) assert.throws(() => workers(bad), UserError, String(bad));
  });

  it("reads the DNS-over-TCP limits: the declared defaults, seconds as milliseconds, nonsense refused with the option's name", () => {
    const tcp = (o: Record<string, unknown> = {}) => readDnsConfig({ "name-servers": ["ns1.example"], ...o }).tcp;
    const defaults = Object.fromEntries(
      Object.entries(TCP_LIMIT_OPTIONS).map(([k, spec]) => [k, spec.unit === "seconds" ? spec.default * 1000 : spec.default]),
    );
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
});
