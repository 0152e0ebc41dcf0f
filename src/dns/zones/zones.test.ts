import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { EdgeError } from "../../core/errors.js";
import type { DnsRecord } from "../model.js";
import { importZone } from "./bind.js";
import { resolveRecordName } from "./names.js";
import { rnameFromInput } from "./soa.js";
import type { ZoneDraft } from "./zone-state.js";

describe("DNS zone building blocks", () => {
  it("converts RNAME from e-mail form as the spec says", () => {
    assert.equal(rnameFromInput("hostmaster@example.com"), "hostmaster.example.com");
    assert.equal(rnameFromInput("first.last@example.com"), "first\\.last.example.com");
    assert.equal(rnameFromInput("first\\.last.example.com."), "first\\.last.example.com");
    assert.equal(rnameFromInput("nodots"), undefined);
    assert.equal(rnameFromInput("a@b@"), undefined);
  });

  it("resolves record names: @, relative, absolute with or without the dot, Unicode to punycode", () => {
    assert.equal(resolveRecordName("@", "example.com"), "example.com");
    assert.equal(resolveRecordName("www", "example.com"), "www.example.com");
    assert.equal(resolveRecordName("WWW.Example.com", "example.com"), "www.example.com");
    assert.equal(resolveRecordName("www.example.com.", "example.com"), "www.example.com");
    assert.equal(resolveRecordName("bücher", "example.com"), "xn--bcher-kva.example.com");
    assert.throws(() => resolveRecordName("www.other.org.", "example.com"), EdgeError);
  });

  it("reads zone files: $ORIGIN, $TTL, blank owners, parentheses, comments, the proxied tag", async () => {
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
    const res = await importZone(text, draft, false, (b) => {
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
    await assert.rejects(
      importZone("x IN A (1.2.3.4\n", draft, false, () => ({}) as DnsRecord),
      chained(/line 1: unbalanced parentheses/),
    );
    await assert.rejects(
      importZone("$INCLUDE other.zone\n", draft, false, () => ({}) as DnsRecord),
      chained(/unsupported directive/),
    );
  });
});
