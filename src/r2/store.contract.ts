import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import type { ContentStore } from "../core/content/store.js";
import { EdgeError } from "../core/errors.js";
import { storeContract } from "../core/testing/contract.js";
import { eventually } from "../core/testing/eventually.js";
import { R2Codes } from "./errors.js";
import { R2BodyPolicy } from "./objects/body-policy.js";
import type { BucketRef, R2CorsRule, R2GetResult, R2PutOptions, R2Store } from "./store.js";
import { newRules } from "./notifications/rules.js";

/**
 * A store under test and the content store that holds its bytes (the garbage-collection cases sweep it with what
 * the store says is live, as the service does).
 */
interface R2StoreUnderTest {
  store: R2Store;
  content: ContentStore;
}

const ACC = "acc1";
const OTHER = "acc2";
const B: BucketRef = { accountId: ACC, bucketName: "bkt" };
const MiB = 1024 * 1024;
/** Where both backends move a body out of the database. */
const SMALL = R2BodyPolicy.rowBytes;

/** `size` bytes that differ with `seed` and along their length (a range read of the wrong place shows). */
const patterned = (size: number, seed = 0) => Buffer.from(Array.from({ length: size }, (_, i) => (i * 7 + seed * 13 + (i >> 8)) & 0xff));

const CORS_RULE: R2CorsRule = {
  allowedOrigins: ["https://app.example"],
  allowedMethods: ["GET", "PUT"],
  allowedHeaders: ["*"],
  exposeHeaders: ["ETag"],
  maxAgeSeconds: 600,
};

const md5 = (s: string | Buffer) => createHash("md5").update(s).digest("hex");
const strong = (value: string) => ({ type: "strong" as const, value });

async function bodyOf(r: R2GetResult | undefined): Promise<string> {
  assert.ok(r && r.body, "expected a body");
  return text(r.body);
}

/** Asserts that `action` is refused with this status and R2 code. */
async function rejectsWith(action: Promise<unknown> | (() => Promise<unknown>), status: number, code: number): Promise<void> {
  await assert.rejects(action, (e: unknown) => {
    assert.ok(e instanceof EdgeError, `expected an EdgeError, got ${String(e)}`);
    assert.equal(e.status, status);
    assert.equal(e.errors[0].code, code);
    return true;
  });
}

/** What every R2Store does, whatever keeps the rows and the bytes (run by sqlite-store.test.ts). */
export const describeR2Store = storeContract<R2StoreUnderTest>("R2Store", (it) => {
  // ---- buckets ----

  it("bucket names follow R2's pattern and are unique per account; another account may reuse one", async ({ store }) => {
    for (const bad of ["ab", "-abc", "abc-", "ABC", "a_b", "a".repeat(64)]) await rejectsWith(store.createBucket(ACC, bad), 400, R2Codes.invalidBucketName);
    const created = await store.createBucket(ACC, "abc", { location: "WEUR", storageClass: "InfrequentAccess" });
    assert.deepEqual(created, { name: "abc", creationDate: created.creationDate, location: "weur", storageClass: "InfrequentAccess" });
    assert.ok(Date.parse(created.creationDate));
    assert.deepEqual(await store.getBucket(ACC, "abc"), created);
    await store.createBucket(ACC, "a".repeat(63));
    await rejectsWith(store.createBucket(ACC, "abc"), 409, R2Codes.bucketAlreadyExists);
    await rejectsWith(store.createBucket(ACC, "xyz", { storageClass: "Glacier" }), 400, R2Codes.invalidArgument);
    const theirs = await store.createBucket(OTHER, "abc");
    assert.deepEqual([theirs.location, theirs.storageClass], ["auto", "Standard"]);
    assert.equal(await store.getBucket(ACC, "nope"), undefined);
    assert.equal(await store.getBucket("acc3", "abc"), undefined);
  });

  it("changes a bucket's default storage class, only its own account's, and refuses an unknown class", async ({ store }) => {
    await store.createBucket(ACC, "cls");
    const changed = await store.setBucketStorageClass(ACC, "cls", "InfrequentAccess");
    assert.equal(changed.storageClass, "InfrequentAccess");
    assert.equal(changed.name, "cls");
    assert.equal((await store.getBucket(ACC, "cls"))?.storageClass, "InfrequentAccess");
    await rejectsWith(store.setBucketStorageClass(ACC, "cls", "Glacier"), 400, R2Codes.invalidArgument);
    assert.equal((await store.getBucket(ACC, "cls"))?.storageClass, "InfrequentAccess");
    await rejectsWith(store.setBucketStorageClass(OTHER, "cls", "Standard"), 404, R2Codes.bucketNotFound);
    await rejectsWith(store.setBucketStorageClass(ACC, "nope", "Standard"), 404, R2Codes.bucketNotFound);
  });

  it("lists an account's buckets by name, filtered by a substring, after a name, up to a limit", async ({ store }) => {
    for (const name of ["photos", "backups", "photo-archive", "logs"]) await store.createBucket(ACC, name);
    await store.createBucket(OTHER, "photos-of-others");
    const names = async (opts?: Parameters<R2Store["listBuckets"]>[1]) => (await store.listBuckets(ACC, opts)).map((b) => b.name);
    assert.deepEqual(await names(), ["backups", "logs", "photo-archive", "photos"]);
    assert.deepEqual(await names({ nameContains: "photo" }), ["photo-archive", "photos"]);
    assert.deepEqual(await names({ startAfter: "logs" }), ["photo-archive", "photos"]);
    assert.deepEqual(await names({ limit: 2 }), ["backups", "logs"]);
    assert.deepEqual(await names({ nameContains: "o", startAfter: "backups", limit: 2 }), ["logs", "photo-archive"]);
    assert.deepEqual(
      (await store.listBuckets(OTHER)).map((b) => b.name),
      ["photos-of-others"],
    );
    assert.deepEqual(await store.listBuckets("acc3"), []);
  });

  it("refuses to delete a bucket that holds objects or unfinished uploads; a deleted bucket is gone", async ({ store }) => {
    await store.createBucket(ACC, "abc");
    await store.createBucket(OTHER, "abc");
    const ref = { accountId: ACC, bucketName: "abc" };
    await store.put(ref, "k", Buffer.from("x"));
    await rejectsWith(store.deleteBucket(ACC, "abc"), 409, R2Codes.bucketNotEmpty);
    await store.delete(ref, "k");
    const upload = await store.createMultipartUpload(ref, "m");
    await rejectsWith(store.deleteBucket(ACC, "abc"), 409, R2Codes.bucketNotEmpty);
    await store.abortMultipartUpload(ref, "m", upload);
    await store.deleteBucket(ACC, "abc");
    assert.equal(await store.getBucket(ACC, "abc"), undefined);
    await rejectsWith(store.deleteBucket(ACC, "abc"), 404, R2Codes.bucketNotFound);
    assert.equal((await store.getBucket(OTHER, "abc"))?.name, "abc", "the other account's bucket of that name stays");
  });

  it("bucketUsage counts each bucket's objects, body bytes, metadata bytes and open uploads, per account", async ({ store }) => {
    await store.createBucket(ACC, "used");
    await store.createBucket(ACC, "empty");
    await store.createBucket(OTHER, "used");
    const ref = { accountId: ACC, bucketName: "used" };
    await store.put(ref, "a", Buffer.from("hello"));
    await store.put(ref, "b", patterned(SMALL + 10), { customMetadata: { owner: "me" } });
    await store.put({ accountId: OTHER, bucketName: "used" }, "x", Buffer.from("theirs"));
    await store.createMultipartUpload(ref, "m");
    const usage = await store.bucketUsage(ACC);
    assert.deepEqual(
      usage.map((u) => [u.bucketName, u.objectCount, u.payloadSize, u.uploadCount]),
      [
        ["empty", 0, 0, 0],
        ["used", 2, 5 + SMALL + 10, 1],
      ],
    );
    assert.ok(usage[1].metadataSize > 0 && usage[0].metadataSize === 0);
    assert.deepEqual(
      (await store.bucketUsage(OTHER, "used")).map((u) => [u.objectCount, u.payloadSize]),
      [[1, 6]],
    );
    assert.deepEqual(await store.bucketUsage(OTHER, "empty"), []);
  });

  it("bucketUsage stays exact through puts, overwrites, deletes, multipart completes and aborts, copies and failed writes", async ({ store }) => {
    await store.createBucket(ACC, "counted");
    await store.createBucket(ACC, "copies");
    const ref = { accountId: ACC, bucketName: "counted" };
    const copies = { accountId: ACC, bucketName: "copies" };
    const usage = async (name: string) => {
      const [u] = await store.bucketUsage(ACC, name);
      return [u!.objectCount, u!.payloadSize, u!.metadataSize, u!.uploadCount];
    };
    // An object's metadata bytes, alone: the total must be the sum of its objects'.
    const metadataOf = async (opts: R2PutOptions) => {
      await store.createBucket(ACC, "probe");
      await store.put({ accountId: ACC, bucketName: "probe" }, "k", Buffer.alloc(0), opts);
      const [, , bytes] = await usage("probe");
      await store.delete({ accountId: ACC, bucketName: "probe" }, "k");
      await store.deleteBucket(ACC, "probe");
      return bytes!;
    };
    const optsA: R2PutOptions = { customMetadata: { owner: "me" } };
    const optsB: R2PutOptions = { httpMetadata: { contentType: "text/plain" } };
    await store.put(ref, "a", Buffer.from("hello"), optsA);
    await store.put(ref, "b", patterned(SMALL + 10), optsB);
    const metaA = await metadataOf(optsA);
    const metaB = await metadataOf(optsB);
    assert.ok(metaA > 0 && metaB > 0);
    assert.deepEqual(await usage("counted"), [2, 5 + SMALL + 10, metaA + metaB, 0]);

    // An overwrite replaces the old row's numbers, it does not add to them.
    await store.put(ref, "a", Buffer.from("hi"), { customMetadata: { owner: "me" } });
    assert.deepEqual(await usage("counted"), [2, 2 + SMALL + 10, metaA + metaB, 0]);

    // Failed writes count nothing: a precondition that fails, a body that breaks off, a missing upload.
    assert.equal(await store.put(ref, "a", Buffer.from("never"), { onlyIf: { etagDoesNotMatch: [{ type: "wildcard" }] } }), undefined);
    const broken = new Readable({
      read() {
        this.push(Buffer.alloc(1000));
        this.destroy(new Error("the client went away"));
      },
    });
    await assert.rejects(store.put(ref, "c", broken));
    await assert.rejects(store.completeMultipartUpload(ref, "m", "no-such-upload", []));
    assert.deepEqual(await usage("counted"), [2, 2 + SMALL + 10, metaA + metaB, 0]);

    // Multipart: the upload counts until it completes (into an object) or is aborted.
    const id = await store.createMultipartUpload(ref, "m", { customMetadata: { m: "1" } });
    const aborted = await store.createMultipartUpload(ref, "gone");
    assert.deepEqual(await usage("counted"), [2, 2 + SMALL + 10, metaA + metaB, 2]);
    const p1 = await store.uploadPart(ref, "m", id, 1, Buffer.alloc(5 * MiB, "a"));
    const p2 = await store.uploadPart(ref, "m", id, 2, Buffer.from("end"));
    await store.completeMultipartUpload(ref, "m", id, [p1, p2]);
    await store.abortMultipartUpload(ref, "gone", aborted);
    const metaM = await metadataOf({ customMetadata: { m: "1" } });
    assert.deepEqual(await usage("counted"), [3, 2 + SMALL + 10 + 5 * MiB + 3, metaA + metaB + metaM, 0]);

    // A copy counts in its destination bucket only.
    await store.put(copies, "b-copy", (await store.get(ref, "b"))!.body as Readable, {
      ...optsB,
      copySource: { bucket: "counted", key: "b" },
    });
    assert.deepEqual(await usage("copies"), [1, SMALL + 10, metaB, 0]);
    assert.deepEqual(await usage("counted"), [3, 2 + SMALL + 10 + 5 * MiB + 3, metaA + metaB + metaM, 0]);

    // Deletes, one and many (a key that is not there changes nothing), back to zero; the bucket can go.
    await store.delete(ref, "a");
    assert.deepEqual(await usage("counted"), [2, SMALL + 10 + 5 * MiB + 3, metaB + metaM, 0]);
    await store.delete(ref, ["b", "m", "not-there"]);
    await store.delete(copies, "b-copy");
    assert.deepEqual(await usage("counted"), [0, 0, 0, 0]);
    assert.deepEqual(await usage("copies"), [0, 0, 0, 0]);
    await store.deleteBucket(ACC, "counted");
    await store.createBucket(ACC, "counted");
    assert.deepEqual(await usage("counted"), [0, 0, 0, 0], "a bucket made again starts from nothing");
  });

  it("every object operation on a bucket that does not exist is a bucketNotFound", async ({ store }) => {
    await store.createBucket(OTHER, "theirs");
    const missing = { accountId: ACC, bucketName: "theirs" };
    const notFound = (action: Promise<unknown>) => rejectsWith(action, 404, R2Codes.bucketNotFound);
    await notFound(store.put(missing, "k", Buffer.from("x")));
    await notFound(store.put(missing, "k", Readable.from([Buffer.from("x")])));
    await notFound(store.get(missing, "k"));
    await notFound(store.head(missing, "k"));
    await notFound(store.list(missing));
    await notFound(store.delete(missing, "k"));
    await notFound(store.createMultipartUpload(missing, "k"));
  });

  // ---- objects ----

  it("put then get: the etag is the MD5, metadata round-trips, a stream body works", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    const info = await store.put(B, "dir/hello.txt", Readable.from([Buffer.from("hello "), Buffer.from("world")]), {
      httpMetadata: { contentType: "text/plain", cacheControl: "max-age=60", cacheExpiry: 1_700_000_000_000 },
      customMetadata: { owner: "ops", ü: "ñ" },
    });
    assert.ok(info);
    assert.equal(info.key, "dir/hello.txt");
    assert.equal(info.etag, md5("hello world"));
    assert.equal(info.size, 11);
    assert.equal(info.checksums.md5, md5("hello world"));
    assert.equal(info.storageClass, "Standard");
    assert.match(info.version, /^[0-9a-f]{32}$/);
    const got = await store.get(B, "dir/hello.txt");
    assert.equal(await bodyOf(got), "hello world");
    assert.deepEqual(got!.object, info);
    assert.deepEqual(got!.object.httpMetadata, { contentType: "text/plain", cacheControl: "max-age=60", cacheExpiry: 1_700_000_000_000 });
    assert.deepEqual(got!.object.customMetadata, { owner: "ops", ü: "ñ" });
    assert.deepEqual(await store.head(B, "dir/hello.txt"), info);
    assert.equal(await store.head(B, "missing"), undefined);
    assert.equal(await store.get(B, "missing"), undefined);

    const again = await store.put(B, "dir/hello.txt", Buffer.from("bye"), { storageClass: "InfrequentAccess" });
    assert.notEqual(again!.version, info.version, "an overwrite is a new version");
    assert.deepEqual((await store.head(B, "dir/hello.txt"))?.httpMetadata, {}, "an overwrite replaces the metadata");
    assert.equal((await store.head(B, "dir/hello.txt"))?.storageClass, "InfrequentAccess");
    assert.equal(await bodyOf(await store.get(B, "dir/hello.txt")), "bye");
  });

  it("http metadata keeps only its known fields, typed; custom metadata keys are data whatever their name", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    const http = { contentType: "a/b", contentLanguage: "fr", contentDisposition: "inline", contentEncoding: "gzip", cacheControl: "no-cache" };
    const stored = await store.put(B, "h", Buffer.from("x"), { httpMetadata: { ...http, cacheExpiry: "1700000000000", color: "blue" } as never });
    assert.deepEqual(stored!.httpMetadata, { ...http, cacheExpiry: 1_700_000_000_000 });
    await rejectsWith(store.put(B, "h2", Buffer.from("x"), { httpMetadata: { contentType: 5 } as never }), 400, R2Codes.invalidArgument);
    await rejectsWith(store.put(B, "h2", Buffer.from("x"), { httpMetadata: { cacheExpiry: "soon" } as never }), 400, R2Codes.invalidArgument);
    await rejectsWith(store.put(B, "h2", Buffer.from("x"), { customMetadata: { n: 1 } as never }), 400, R2Codes.invalidArgument);

    const custom: Record<string, string> = Object.create(null);
    custom["__proto__"] = "p";
    custom["constructor"] = "c";
    await store.put(B, "names", Buffer.from("x"), { customMetadata: custom });
    const got = (await store.head(B, "names"))!.customMetadata;
    assert.deepEqual(Object.entries(got).sort(), [
      ["__proto__", "p"],
      ["constructor", "c"],
    ]);
  });

  it("limits: key bytes, custom metadata bytes, announced size, checksums; nothing is written on refusal", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    await rejectsWith(store.put(B, "k".repeat(1025), Buffer.from("x")), 400, R2Codes.invalidObjectName);
    await store.put(B, "é".repeat(512), Buffer.from("x")); // exactly 1,024 bytes
    await rejectsWith(store.put(B, "", Buffer.from("x")), 400, R2Codes.invalidObjectName);
    await rejectsWith(store.head(B, ""), 400, R2Codes.invalidObjectName);
    await rejectsWith(store.put(B, "meta", Buffer.from("x"), { customMetadata: { k: "v".repeat(2048) } }), 400, R2Codes.metadataTooLarge);
    await rejectsWith(store.put(B, "sized", Readable.from([Buffer.from("abc")]), { size: 4 }), 400, R2Codes.invalidArgument);
    await rejectsWith(store.put(B, "huge", Readable.from([Buffer.from("abc")]), { size: 6 * 1024 ** 3 }), 400, R2Codes.entityTooLarge);
    await rejectsWith(store.put(B, "digest", Buffer.from("abc"), { md5: md5("abd") }), 400, R2Codes.invalidDigest);
    const sha1 = createHash("sha1").update("abc").digest("hex");
    await rejectsWith(store.put(B, "digest", Buffer.from("abc"), { sha1: "00" + sha1.slice(2) }), 400, R2Codes.invalidDigest);
    for (const k of ["meta", "sized", "huge", "digest"]) assert.equal(await store.head(B, k), undefined);
    const sha256 = createHash("sha256").update("abc").digest("hex");
    const ok = await store.put(B, "digest", Readable.from([Buffer.from("abc")]), { sha1, sha256, md5: md5("abc").toUpperCase() });
    assert.deepEqual(ok?.checksums, { md5: md5("abc"), sha1, sha256 });
  });

  it("an overwrite does not disturb a read that started before it", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    await store.put(B, "ow", Buffer.from("first version"));
    const reading = await store.get(B, "ow");
    await store.put(B, "ow", Buffer.from("second"));
    assert.equal(await bodyOf(reading), "first version", "a read that started before the overwrite finishes with the old bytes");
    assert.equal(await bodyOf(await store.get(B, "ow")), "second");
    const deleting = await store.get(B, "ow");
    await store.delete(B, "ow");
    assert.equal(await bodyOf(deleting), "second", "and so does a delete");
  });

  it("bodies around the small-body threshold (64 KiB) read back whole and by range; an overwrite or delete frees the body it replaced", async ({
    store,
    content,
  }) => {
    await store.createBucket(ACC, "bkt");
    const sizes = [0, SMALL - 1, SMALL, SMALL + 1];
    for (const size of sizes) {
      const bytes = patterned(size);
      // A buffer, a stream of announced length, and a stream whose length nobody announced.
      for (const [how, body, opts] of [
        ["buffer", bytes, {}],
        ["announced", Readable.from([bytes.subarray(0, size >> 1), bytes.subarray(size >> 1)]), { size }],
        ["unannounced", Readable.from([bytes.subarray(0, size >> 1), bytes.subarray(size >> 1)]), {}],
      ] as const) {
        const key = `edge/${size}/${how}`;
        const info = await store.put(B, key, body, opts);
        assert.equal(info?.size, size, key);
        assert.equal(info?.etag, md5(bytes), key);
        const whole = await store.get(B, key);
        assert.ok(Buffer.concat(await whole!.body!.toArray()).equals(bytes), `${key} reads back whole`);
        if (size > 2) {
          const part = await store.get(B, key, { range: { offset: size - 3, length: 2 } });
          assert.ok(Buffer.concat(await part!.body!.toArray()).equals(bytes.subarray(size - 3, size - 1)), `${key} by range`);
        }
      }
    }
    await store.delete(
      B,
      (await store.list(B, { prefix: "edge/" })).objects.map((o) => o.key),
    );

    // The bytes each version needs, as the sweep sees them: once replaced or deleted, they are removed (not left
    // for the sweep), whichever side of the threshold the old and the new body are.
    const freed = async (before: Set<string>) => {
      const now = await store.liveContent();
      for (const id of before) {
        if (now.has(id)) continue;
        await eventually(
          () =>
            content.readAll(id).then(
              () => false,
              (e: NodeJS.ErrnoException) => e.code === "ENOENT",
            ),
          `body ${id} to be removed`,
        );
      }
    };
    const versions = [SMALL, SMALL + 1, 10, 2 * SMALL, SMALL - 1];
    for (const [i, size] of versions.entries()) {
      const before = await store.liveContent();
      await store.put(B, "shifting", patterned(size, i));
      await freed(before);
      assert.ok(Buffer.concat(await (await store.get(B, "shifting"))!.body!.toArray()).equals(patterned(size, i)), `version ${i} (${size} bytes)`);
    }
    const conditional = await store.put(B, "shifting", patterned(SMALL + 5, 9), { onlyIf: { etagMatches: [strong(md5(patterned(SMALL - 1, 4)))] } });
    assert.ok(conditional, "a conditional overwrite small → large");
    const beforeDelete = await store.liveContent();
    await store.delete(B, "shifting");
    await freed(beforeDelete);
    const left = await store.liveContent();
    assert.equal(await content.gc((id) => left.has(id), 0), 0, "nothing was left for the sweep");
  });

  it("conditional get and put (etag match/no match, uploaded before/after, seconds granularity)", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    const info = (await store.put(B, "cond", Buffer.from("v1")))!;
    const hit = async (onlyIf: object) => (await store.get(B, "cond", { onlyIf }))!;
    assert.ok((await hit({ etagMatches: [strong(info.etag)] })).body);
    assert.equal((await hit({ etagMatches: [strong("nope")] })).body, undefined);
    const refused = await hit({ etagMatches: [strong("nope")] });
    assert.ok("preconditionFailed" in refused);
    assert.deepEqual(refused.object, info, "a failed precondition still gives the metadata");
    assert.equal((await hit({ etagMatches: [{ type: "weak", value: info.etag }] })).body, undefined, "weak etags never match strongly");
    assert.ok((await hit({ etagMatches: [{ type: "wildcard" }] })).body);
    assert.equal((await hit({ etagDoesNotMatch: [strong(info.etag)] })).body, undefined);
    assert.ok((await hit({ etagDoesNotMatch: [strong("other")] })).body);
    assert.ok((await hit({ uploadedBefore: info.uploaded + 1 })).body);
    assert.equal((await hit({ uploadedBefore: info.uploaded })).body, undefined);
    assert.ok((await hit({ uploadedAfter: info.uploaded - 1 })).body);
    assert.equal((await hit({ uploadedAfter: info.uploaded })).body, undefined);
    // RFC 7232: a matching If-Match overrides a failing If-Unmodified-Since.
    assert.ok((await hit({ etagMatches: [strong(info.etag)], uploadedBefore: 0 })).body);
    // Seconds granularity: an HTTP date in the same second counts as "not after".
    assert.equal((await hit({ uploadedAfter: Math.floor(info.uploaded / 1000) * 1000, secondsGranularity: true })).body, undefined);

    assert.equal(await store.put(B, "cond", Buffer.from("v2"), { onlyIf: { etagMatches: [strong("nope")] } }), undefined);
    assert.equal(await bodyOf(await store.get(B, "cond")), "v1", "a refused put writes nothing");
    assert.ok(await store.put(B, "cond", Buffer.from("v2"), { onlyIf: { etagMatches: [strong(info.etag)] } }));
    // If-None-Match: * creates only when absent.
    assert.equal(await store.put(B, "cond", Buffer.from("v3"), { onlyIf: { etagDoesNotMatch: [{ type: "wildcard" }] } }), undefined);
    assert.ok(await store.put(B, "fresh", Buffer.from("new"), { onlyIf: { etagDoesNotMatch: [{ type: "wildcard" }] } }));
    assert.equal(await store.put(B, "absent", Buffer.from("x"), { onlyIf: { etagMatches: [{ type: "wildcard" }] } }), undefined);
    assert.equal(await store.head(B, "absent"), undefined);
  });

  it("range reads: offset/length, suffix, clipping, 416", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    await store.put(B, "range", Buffer.from("0123456789"));
    const read = async (range: object) => {
      const r = await store.get(B, "range", { range: range as never });
      return { text: await bodyOf(r), range: (r as { range: object }).range };
    };
    assert.deepEqual(await read({ offset: 2, length: 3 }), { text: "234", range: { offset: 2, length: 3 } });
    assert.deepEqual(await read({ offset: 7 }), { text: "789", range: { offset: 7, length: 3 } });
    assert.deepEqual(await read({ suffix: 4 }), { text: "6789", range: { offset: 6, length: 4 } });
    assert.deepEqual(await read({ suffix: 40 }), { text: "0123456789", range: { offset: 0, length: 10 } });
    assert.deepEqual(await read({ offset: 8, length: 100 }), { text: "89", range: { offset: 8, length: 2 } });
    await rejectsWith(store.get(B, "range", { range: { offset: 10 } }), 416, R2Codes.invalidRange);
    await rejectsWith(store.get(B, "range", { range: { offset: -1 } }), 400, R2Codes.invalidArgument);
  });

  it("listings are in bytewise UTF-8 order, whatever the case, accents or planes of the keys", async ({ store }) => {
    // Sorted by their UTF-8 bytes (what S3 and R2 promise): not by locale, and not by UTF-16 code units ("\u{FF5E}" < "\u{1F600}" in bytes).
    const keys = ["A", "B", "Z", "_", "a", "b/x", "b/\u{10FFFF}", "z", "\u00e9", "\u00e9t\u00e9", "\uFF5E", "\u{1F600}"];
    const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    assert.deepEqual(sorted, keys);
    await store.createBucket(ACC, "bkt");
    for (const k of [...keys].reverse()) await store.put(B, k, Buffer.from(k));
    assert.deepEqual(
      (await store.list(B)).objects.map((o) => o.key),
      keys,
    );
    const paged: string[] = [];
    for (let cursor: string | undefined, i = 0; i === 0 || cursor; i++) {
      const page = await store.list(B, { limit: 5, cursor });
      paged.push(...page.objects.map((o) => o.key));
      cursor = page.cursor;
    }
    assert.deepEqual(paged, keys, "pages resume in the same order");
    const grouped = await store.list(B, { delimiter: "/" });
    assert.deepEqual(grouped.delimitedPrefixes, ["b/"], "a key ending in U+10FFFF stays under its prefix");
    for (const k of ["\u{1F600}", "Z", "\u00e9"]) await store.createMultipartUpload(B, k);
    assert.deepEqual(
      (await store.listMultipartUploads(B)).uploads.map((u) => u.key),
      ["Z", "\u00e9", "\u{1F600}"],
    );
  });

  it("listing: prefix, delimiter, cursor, startAfter, limit, include", async ({ store }) => {
    await store.createBucket(ACC, "listing");
    const L: BucketRef = { accountId: ACC, bucketName: "listing" };
    const keys = ["a", "b/1", "b/2", "b/3/x", "c/1", "d", "e/f/g", "photos/2024/x.jpg"];
    for (const k of keys) await store.put(L, k, Buffer.from(k), { httpMetadata: { contentType: "text/plain" }, customMetadata: { k } });

    const all = await store.list(L);
    assert.deepEqual(
      all.objects.map((o) => o.key),
      keys,
    );
    assert.equal(all.truncated, false);
    assert.equal(all.cursor, undefined);
    assert.deepEqual(all.objects[0].httpMetadata, {}, "metadata only with include");
    assert.deepEqual(all.objects[0].customMetadata, {});
    assert.equal(all.objects[0].etag, md5("a"));
    const inc = await store.list(L, { include: ["httpMetadata", "customMetadata"], limit: 1 });
    assert.deepEqual(inc.objects[0].httpMetadata, { contentType: "text/plain" });
    assert.deepEqual(inc.objects[0].customMetadata, { k: "a" });
    const onlyCustom = await store.list(L, { include: ["customMetadata"], limit: 1 });
    assert.deepEqual([onlyCustom.objects[0].httpMetadata, onlyCustom.objects[0].customMetadata], [{}, { k: "a" }]);

    const keysOf = async (opts: Parameters<R2Store["list"]>[1]) => (await store.list(L, opts)).objects.map((o) => o.key);
    assert.deepEqual(await keysOf({ prefix: "b/" }), ["b/1", "b/2", "b/3/x"]);
    const d = await store.list(L, { delimiter: "/" });
    assert.deepEqual(
      d.objects.map((o) => o.key),
      ["a", "d"],
    );
    assert.deepEqual(d.delimitedPrefixes, ["b/", "c/", "e/", "photos/"]);
    const db2 = await store.list(L, { prefix: "b/", delimiter: "/" });
    assert.deepEqual(
      db2.objects.map((o) => o.key),
      ["b/1", "b/2"],
    );
    assert.deepEqual(db2.delimitedPrefixes, ["b/3/"]);
    assert.deepEqual(await keysOf({ startAfter: "b/3/x" }), ["c/1", "d", "e/f/g", "photos/2024/x.jpg"]);

    // Walk with a cursor, two items a page, with a delimiter: every item exactly once.
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.list(L, { delimiter: "/", limit: 2, cursor });
      seen.push(...page.objects.map((o) => o.key), ...page.delimitedPrefixes);
      assert.ok(page.objects.length + page.delimitedPrefixes.length <= 2);
      cursor = page.truncated ? page.cursor : undefined;
      if (page.truncated) assert.ok(page.cursor);
      pages++;
    } while (cursor);
    assert.deepEqual(seen.sort(), ["a", "b/", "c/", "d", "e/", "photos/"]);
    assert.equal(pages, 3);

    // Without a delimiter.
    const flat: string[] = [];
    cursor = undefined;
    do {
      const page = await store.list(L, { limit: 3, cursor });
      flat.push(...page.objects.map((o) => o.key));
      cursor = page.cursor;
    } while (cursor);
    assert.deepEqual(flat, keys);

    await rejectsWith(store.list(L, { limit: 0 }), 400, R2Codes.invalidMaxKeys);
    await rejectsWith(store.list(L, { limit: 1001 }), 400, R2Codes.invalidMaxKeys);
    await rejectsWith(store.list(L, { cursor: "!!not-a-cursor" }), 400, R2Codes.invalidArgument);
  });

  it("delete one or many; missing keys are fine; at most 1,000 at once", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    for (const k of ["x1", "x2", "x3", "keep"]) await store.put(B, k, Buffer.from(k));
    await store.delete(B, "x1");
    await store.delete(B, ["x2", "x3", "never-existed"]);
    for (const k of ["x1", "x2", "x3"]) assert.equal(await store.head(B, k), undefined);
    await rejectsWith(
      store.delete(
        B,
        Array.from({ length: 1001 }, (_, i) => `k${i}`),
      ),
      400,
      R2Codes.invalidArgument,
    );
    await rejectsWith(store.delete(B, ["ok", ""]), 400, R2Codes.invalidObjectName);
    assert.ok(await store.head(B, "keep"));
  });

  // ---- multipart uploads ----

  it("multipart: parts in any order, completed in ascending order; the ETag is the MD5 of the part MD5s and their count", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    const p1 = Buffer.alloc(5 * MiB, "a");
    const p2 = Buffer.from("tail-bytes");
    const id = await store.createMultipartUpload(B, "big/multi.bin", { httpMetadata: { contentType: "application/x-test" }, customMetadata: { m: "1" } });
    assert.equal(await store.head(B, "big/multi.bin"), undefined, "nothing is visible before completion");
    const e2 = await store.uploadPart(B, "big/multi.bin", id, 2, Readable.from([p2]));
    const e1 = await store.uploadPart(B, "big/multi.bin", id, 1, p1);
    assert.deepEqual(e1, { partNumber: 1, etag: md5(p1) });
    await rejectsWith(store.completeMultipartUpload(B, "big/multi.bin", id, [e2, e1]), 400, R2Codes.invalidPart);
    await rejectsWith(store.completeMultipartUpload(B, "big/multi.bin", id, [e1, e1]), 400, R2Codes.invalidPart);
    await rejectsWith(store.completeMultipartUpload(B, "big/multi.bin", id, [e1, { partNumber: 2, etag: "bad" }]), 400, R2Codes.invalidPart);
    await rejectsWith(store.completeMultipartUpload(B, "big/multi.bin", id, [e1, { partNumber: 3, etag: e2.etag }]), 400, R2Codes.invalidPart);
    await rejectsWith(store.completeMultipartUpload(B, "big/multi.bin", id, []), 400, R2Codes.invalidPart);
    const obj = await store.completeMultipartUpload(B, "big/multi.bin", id, [e1, { partNumber: 2, etag: `"${e2.etag}"` }]);
    const expectedEtag = md5(Buffer.concat([Buffer.from(md5(p1), "hex"), Buffer.from(md5(p2), "hex")])) + "-2";
    assert.equal(obj.etag, expectedEtag);
    assert.equal(obj.size, p1.length + p2.length);
    assert.deepEqual(obj.httpMetadata, { contentType: "application/x-test" });
    assert.deepEqual(obj.customMetadata, { m: "1" });
    assert.deepEqual(await store.head(B, "big/multi.bin"), obj);
    const whole = await store.get(B, "big/multi.bin");
    assert.ok(Buffer.concat(await whole!.body!.toArray()).equals(Buffer.concat([p1, p2])));
    // A range across the part boundary.
    assert.equal(await bodyOf(await store.get(B, "big/multi.bin", { range: { offset: 5 * MiB - 2, length: 6 } })), "aatail");
    await rejectsWith(store.uploadPart(B, "big/multi.bin", id, 3, Buffer.from("x")), 404, R2Codes.noSuchUpload);
    await rejectsWith(store.completeMultipartUpload(B, "big/multi.bin", id, [e1, e2]), 404, R2Codes.noSuchUpload);
  });

  it("multipart: a part uploaded again replaces the first; parts may be left out", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    const id = await store.createMultipartUpload(B, "redo");
    await store.uploadPart(B, "redo", id, 1, Buffer.from("first try"));
    const again = await store.uploadPart(B, "redo", id, 1, Buffer.alloc(5 * MiB, "b"));
    const last = await store.uploadPart(B, "redo", id, 3, Buffer.from("end"));
    await store.uploadPart(B, "redo", id, 2, Buffer.from("never listed"));
    const obj = await store.completeMultipartUpload(B, "redo", id, [again, last]);
    assert.equal(obj.size, 5 * MiB + 3);
    assert.equal(await bodyOf(await store.get(B, "redo", { range: { suffix: 4 } })), "bend");
  });

  it("multipart: refusals (part sizes and numbers, unknown uploads, another key or bucket), and abort", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    await store.createBucket(ACC, "other");
    const id = await store.createMultipartUpload(B, "small");
    const s1 = await store.uploadPart(B, "small", id, 1, Buffer.from("tiny"));
    const s2 = await store.uploadPart(B, "small", id, 2, Buffer.from("tiny"));
    await rejectsWith(store.completeMultipartUpload(B, "small", id, [s1, s2]), 400, R2Codes.entityTooSmall);
    await rejectsWith(store.uploadPart(B, "small", id, 0, Buffer.from("x")), 400, R2Codes.invalidPart);
    await rejectsWith(store.uploadPart(B, "small", id, 10_001, Buffer.from("x")), 400, R2Codes.invalidPart);
    await rejectsWith(store.uploadPart(B, "small", id, 3, Readable.from([Buffer.from("abc")]), 4), 400, R2Codes.invalidArgument);
    await rejectsWith(store.uploadPart(B, "another-key", id, 1, Buffer.from("x")), 404, R2Codes.noSuchUpload);
    await rejectsWith(store.uploadPart({ accountId: ACC, bucketName: "other" }, "small", id, 1, Buffer.from("x")), 404, R2Codes.noSuchUpload);
    await rejectsWith(store.uploadPart({ accountId: OTHER, bucketName: "bkt" }, "small", id, 1, Buffer.from("x")), 404, R2Codes.bucketNotFound);
    await rejectsWith(store.uploadPart(B, "small", "no-such-upload", 1, Buffer.from("x")), 404, R2Codes.noSuchUpload);
    await rejectsWith(store.createMultipartUpload(B, "k", { customMetadata: { k: "v".repeat(2048) } }), 400, R2Codes.metadataTooLarge);
    await store.abortMultipartUpload(B, "small", id);
    await rejectsWith(store.abortMultipartUpload(B, "small", id), 404, R2Codes.noSuchUpload);
    await rejectsWith(store.completeMultipartUpload(B, "small", id, [s1]), 404, R2Codes.noSuchUpload);
    assert.equal(await store.head(B, "small"), undefined);
  });

  it("multipart uploads started before a cutoff are aborted; later ones and finished objects stay", async ({ store }) => {
    await store.createBucket(ACC, "bkt");
    const done = await store.createMultipartUpload(B, "done");
    await store.completeMultipartUpload(B, "done", done, [await store.uploadPart(B, "done", done, 1, Buffer.from("kept"))]);
    const stale = await store.createMultipartUpload(B, "stale");
    await store.uploadPart(B, "stale", stale, 1, Buffer.from("abandoned"));
    assert.equal(await store.abortStaleUploads(Date.now() - 60_000), 0, "a fresh upload is kept");
    assert.equal(await store.abortStaleUploads(Date.now() + 1), 1);
    await rejectsWith(store.uploadPart(B, "stale", stale, 2, Buffer.from("x")), 404, R2Codes.noSuchUpload);
    assert.equal(await bodyOf(await store.get(B, "done")), "kept");
    await store.delete(B, "done");
    await store.deleteBucket(ACC, "bkt"); // no unfinished upload holds the bucket any more
  });

  it("uploads listed by key then upload id, grouped by delimiter, paged with markers; other accounts unseen", async ({ store }) => {
    const O: BucketRef = { accountId: OTHER, bucketName: "bkt" };
    await store.createBucket(ACC, "bkt");
    await store.createBucket(OTHER, "bkt");
    const keys = ["a/1", "a/2", "b", "b", "c/x/1", "d"];
    const made: { key: string; id: string }[] = [];
    for (const key of keys) made.push({ key, id: await store.createMultipartUpload(B, key) });
    await store.createMultipartUpload(O, "a/1");
    const bIds = made.filter((m) => m.key === "b").map((m) => m.id);
    bIds.sort();

    const all = await store.listMultipartUploads(B);
    assert.deepEqual(
      all.uploads.map((u) => u.key),
      ["a/1", "a/2", "b", "b", "c/x/1", "d"],
    );
    assert.deepEqual(
      all.uploads.filter((u) => u.key === "b").map((u) => u.uploadId),
      bIds,
    );
    assert.equal(all.truncated, false);
    assert.ok(all.uploads.every((u) => u.storageClass === "Standard" && u.initiated > 0));

    const grouped = await store.listMultipartUploads(B, { delimiter: "/" });
    assert.deepEqual(grouped.delimitedPrefixes, ["a/", "c/"]);
    assert.deepEqual(
      grouped.uploads.map((u) => u.key),
      ["b", "b", "d"],
    );

    const prefixed = await store.listMultipartUploads(B, { prefix: "c/", delimiter: "/" });
    assert.deepEqual(prefixed.delimitedPrefixes, ["c/x/"]);
    assert.deepEqual(prefixed.uploads, []);

    // Pages of two, with a delimiter: each item once, the next page starting from the markers.
    const seen: string[] = [];
    let page = await store.listMultipartUploads(B, { delimiter: "/", limit: 2 });
    for (;;) {
      seen.push(...page.delimitedPrefixes, ...page.uploads.map((u) => `${u.key}#${u.uploadId}`));
      if (!page.truncated) break;
      assert.ok(page.nextKeyMarker);
      page = await store.listMultipartUploads(B, { delimiter: "/", limit: 2, keyMarker: page.nextKeyMarker, uploadIdMarker: page.nextUploadIdMarker });
    }
    assert.deepEqual(seen.sort(), ["a/", "c/", `b#${bIds[0]}`, `b#${bIds[1]}`, `d#${made[5].id}`].sort());

    // key-marker alone skips every upload of that key.
    const afterB = await store.listMultipartUploads(B, { keyMarker: "b" });
    assert.deepEqual(
      afterB.uploads.map((u) => u.key),
      ["c/x/1", "d"],
    );
    const afterFirstB = await store.listMultipartUploads(B, { keyMarker: "b", uploadIdMarker: bIds[0] });
    assert.deepEqual(
      afterFirstB.uploads.map((u) => u.uploadId),
      [bIds[1], made[4].id, made[5].id],
    );

    await rejectsWith(store.listMultipartUploads(B, { limit: 0 }), 400, R2Codes.invalidMaxKeys);
    await rejectsWith(store.listMultipartUploads({ accountId: "acc3", bucketName: "bkt" }), 404, R2Codes.bucketNotFound);

    for (const m of made) await store.abortMultipartUpload(B, m.key, m.id);
    assert.deepEqual((await store.listMultipartUploads(B)).uploads, []);
  });

  it("parts listed by number with their size, md5 etag and upload time; paged; unknown upload is 404", async ({ store }) => {
    const O: BucketRef = { accountId: OTHER, bucketName: "bkt" };
    await store.createBucket(ACC, "bkt");
    await store.createBucket(OTHER, "bkt");
    const id = await store.createMultipartUpload(B, "parts.bin", { storageClass: "InfrequentAccess" });
    const before = Date.now();
    for (const n of [3, 1, 2]) await store.uploadPart(B, "parts.bin", id, n, Buffer.from(`part ${n}`));
    const listed = await store.listParts(B, "parts.bin", id);
    assert.deepEqual(
      listed.parts.map((p) => [p.partNumber, p.size]),
      [
        [1, 6],
        [2, 6],
        [3, 6],
      ],
    );
    assert.match(listed.parts[0].etag, /^[0-9a-f]{32}$/);
    assert.ok(listed.parts.every((p) => p.uploaded >= before - 1000));
    assert.equal(listed.storageClass, "InfrequentAccess");
    assert.equal(listed.truncated, false);

    const first = await store.listParts(B, "parts.bin", id, { limit: 2 });
    assert.deepEqual(
      first.parts.map((p) => p.partNumber),
      [1, 2],
    );
    assert.equal(first.truncated, true);
    assert.equal(first.nextPartNumberMarker, 2);
    const rest = await store.listParts(B, "parts.bin", id, { partNumberMarker: 2 });
    assert.deepEqual(
      rest.parts.map((p) => p.partNumber),
      [3],
    );

    await rejectsWith(store.listParts(B, "other-key", id), 404, R2Codes.noSuchUpload);
    await rejectsWith(store.listParts(O, "parts.bin", id), 404, R2Codes.noSuchUpload);
    await store.abortMultipartUpload(B, "parts.bin", id);
    await rejectsWith(store.listParts(B, "parts.bin", id), 404, R2Codes.noSuchUpload);
  });

  // ---- bucket CORS ----

  it("CORS rules: set, read, replace, delete, per bucket of each account; gone with the bucket", async ({ store }) => {
    const OURS: BucketRef = { accountId: "acc-a", bucketName: "shared-name" };
    const THEIRS: BucketRef = { accountId: "acc-b", bucketName: "shared-name" };
    await store.createBucket(OURS.accountId, OURS.bucketName);
    await store.createBucket(THEIRS.accountId, THEIRS.bucketName);
    assert.equal(await store.getBucketCors(OURS), undefined);
    await store.putBucketCors(OURS, [CORS_RULE]);
    assert.deepEqual(await store.getBucketCors(OURS), [CORS_RULE]);
    assert.equal(await store.getBucketCors(THEIRS), undefined, "the same name in another account has its own rules");
    assert.deepEqual(await store.corsRulesByBucketName("shared-name"), [{ accountId: "acc-a", rules: [CORS_RULE] }]);

    const other = { ...CORS_RULE, allowedOrigins: ["*"], allowedMethods: ["HEAD"] };
    await store.putBucketCors(THEIRS, [other, CORS_RULE]);
    assert.deepEqual(await store.getBucketCors(THEIRS), [other, CORS_RULE]);
    assert.deepEqual(
      (await store.corsRulesByBucketName("shared-name")).map((r) => r.accountId),
      ["acc-a", "acc-b"],
    );

    await store.deleteBucketCors(OURS);
    assert.equal(await store.getBucketCors(OURS), undefined);
    await store.deleteBucketCors(OURS);

    await rejectsWith(store.putBucketCors(OURS, []), 400, R2Codes.invalidArgument);
    await rejectsWith(
      store.putBucketCors(
        OURS,
        Array.from({ length: 101 }, () => CORS_RULE),
      ),
      400,
      R2Codes.invalidArgument,
    );
    await rejectsWith(store.getBucketCors({ accountId: "acc-c", bucketName: "shared-name" }), 404, R2Codes.bucketNotFound);

    await store.deleteBucket(THEIRS.accountId, THEIRS.bucketName);
    assert.deepEqual(await store.corsRulesByBucketName("shared-name"), []);
    await store.createBucket(THEIRS.accountId, THEIRS.bucketName);
    assert.equal(await store.getBucketCors(THEIRS), undefined, "a new bucket of the same name starts without rules");
  });

  // ---- content and its garbage collection ----

  it("liveContent names every byte an object or unfinished upload needs: a sweep with it removes none of them", async ({ store, content }) => {
    await store.createBucket(ACC, "bkt");
    await store.put(B, "one", Buffer.from("single"));
    await store.put(B, "over", Buffer.from("replaced"));
    await store.put(B, "over", Buffer.from("replacement"));
    await store.put(B, "gone", Buffer.from("deleted"));
    await store.delete(B, "gone");
    const multi = await store.createMultipartUpload(B, "multi");
    const m1 = await store.uploadPart(B, "multi", multi, 1, Buffer.alloc(5 * MiB, "m"));
    await store.completeMultipartUpload(B, "multi", multi, [m1, await store.uploadPart(B, "multi", multi, 2, Buffer.from("end"))]);
    const open = await store.createMultipartUpload(B, "open");
    const o1 = await store.uploadPart(B, "open", open, 1, Buffer.alloc(5 * MiB, "o"));

    // What the service's hourly sweep does, with no grace period: anything not live goes.
    const live = await store.liveContent();
    await content.gc((id) => live.has(id), 0);
    assert.equal(await bodyOf(await store.get(B, "one")), "single");
    assert.equal(await bodyOf(await store.get(B, "over")), "replacement");
    assert.equal(await bodyOf(await store.get(B, "multi", { range: { suffix: 5 } })), "mmend");
    const o2 = await store.uploadPart(B, "open", open, 2, Buffer.from("!"));
    await store.completeMultipartUpload(B, "open", open, [o1, o2]);
    const afterCompletion = await store.liveContent();
    await content.gc((id) => afterCompletion.has(id), 0);
    assert.equal(await bodyOf(await store.get(B, "open", { range: { offset: 5 * MiB - 1 } })), "o!", "a completed upload's parts are its object's bytes");
  });

  it("concurrent overwrites and deletes leave whole values of one writer", async ({ store }) => {
    await store.createBucket(ACC, "race");
    const C: BucketRef = { accountId: ACC, bucketName: "race" };
    const writers = Array.from({ length: 24 }, (_, i) =>
      store.put(C, `k${i % 3}`, Readable.from([Buffer.from(`writer ${i} `), Buffer.from("x".repeat(i * 100))])),
    );
    const deleters = [store.delete(C, "k2"), store.delete(C, ["k1", "k2"])];
    await Promise.all([...writers, ...deleters]);
    for (const k of ["k0", "k1", "k2"]) {
      const got = await store.get(C, k);
      if (got) assert.match(await bodyOf(got), /^writer \d+ x*$/, "a whole value of one writer, never a mix");
    }
    assert.ok(await store.head(C, "k0"), "k0 was never deleted");
  });

  it("event notification rules: added per queue, listed oldest first, overlaps and the 101st refused, deleted by id or queue, gone with the bucket", async ({
    store,
  }) => {
    await store.createBucket(ACC, "evt");
    await store.createBucket(OTHER, "evt");
    const E: BucketRef = { accountId: ACC, bucketName: "evt" };
    const otherE: BucketRef = { accountId: OTHER, bucketName: "evt" };
    const [images] = newRules("q1", [{ actions: ["PutObject", "CopyObject"], prefix: "img/", suffix: ".png", description: "pngs" }], new Date(1000));
    await store.addNotificationRules(E, [images!]);
    // Another action on the same keys, and the same action on keys no image can have, do not overlap.
    await store.addNotificationRules(
      E,
      newRules(
        "q2",
        [
          { actions: ["DeleteObject"], prefix: "img/" },
          { actions: ["PutObject"], prefix: "doc/" },
        ],
        new Date(2000),
      ),
    );
    const listed = await store.notificationRules(E);
    assert.deepEqual(
      listed.map((r) => [r.queueId, r.actions, r.prefix, r.suffix, r.description]),
      [
        ["q1", ["PutObject", "CopyObject"], "img/", ".png", "pngs"],
        ["q2", ["DeleteObject"], "img/", "", ""],
        ["q2", ["PutObject"], "doc/", "", ""],
      ],
    );
    assert.equal(listed[0]!.ruleId, images!.ruleId);
    assert.equal(listed[0]!.createdAt, new Date(1000).toISOString());
    // img/ + any suffix overlaps img/ + .png for PutObject (img/a.png matches both); nothing of the refused request is kept.
    await rejectsWith(
      store.addNotificationRules(E, newRules("q3", [{ actions: ["LifecycleDeletion"] }, { actions: ["PutObject"], prefix: "img/a" }])),
      400,
      R2Codes.invalidNotificationConfig,
    );
    await rejectsWith(
      store.addNotificationRules(E, newRules("q3", [{ actions: ["DeleteObject"] }, { actions: ["DeleteObject"] }])),
      400,
      R2Codes.invalidNotificationConfig,
    );
    assert.equal((await store.notificationRules(E)).length, 3, "a refused request writes nothing");
    const many = newRules(
      "q9",
      Array.from({ length: 98 }, (_, i) => ({ actions: ["PutObject" as const], prefix: `many/${String(i).padStart(3, "0")}/` })),
    );
    await rejectsWith(store.addNotificationRules(E, many), 400, R2Codes.invalidNotificationConfig);
    assert.equal((await store.notificationRules(otherE)).length, 0, "another account's bucket of that name has none");
    await rejectsWith(
      store.addNotificationRules({ accountId: OTHER, bucketName: "nope" }, newRules("q1", [{ actions: ["PutObject"] }])),
      404,
      R2Codes.bucketNotFound,
    );

    assert.equal(await store.deleteNotificationRules(E, "q2", [listed[2]!.ruleId, "no-such-rule"]), 1);
    assert.equal(await store.deleteNotificationRules(E, "q1", [listed[1]!.ruleId]), 0, "a rule id of another queue is not removed");
    await store.addNotificationRules(otherE, newRules("q2", [{ actions: ["PutObject"] }]));
    assert.equal(await store.deleteQueueNotificationRules(ACC, "q2"), 1, "only the account's rules sending to q2");
    assert.deepEqual(
      (await store.notificationRules(otherE)).map((r) => r.queueId),
      ["q2"],
    );
    assert.deepEqual(
      (await store.notificationRules(E)).map((r) => r.queueId),
      ["q1"],
    );
    assert.equal(await store.deleteNotificationRules(E, "q1"), 1);
    assert.deepEqual(await store.notificationRules(E), []);

    await store.addNotificationRules(E, newRules("q1", [{ actions: ["PutObject"] }]));
    assert.equal((await store.allNotificationRules()).length, 2, "two buckets have rules");
    await store.deleteBucket(ACC, "evt");
    await store.createBucket(ACC, "evt");
    assert.deepEqual(await store.notificationRules(E), [], "rules go with their bucket");
    await store.put(E, "x", Buffer.from("x"));
    assert.deepEqual(await store.leaseNotifications(100, 60_000, Date.now()), [], "nor do they fire for a new bucket of that name");
  });

  it("every object change records the hosted message for each matching rule, leased once until acked or the lease ends", async ({ store }) => {
    await store.createBucket(ACC, "src");
    await store.createBucket(ACC, "ev2");
    await store.createBucket(ACC, "quiet");
    const E: BucketRef = { accountId: ACC, bucketName: "ev2" };
    const Q: BucketRef = { accountId: ACC, bucketName: "quiet" };
    await store.addNotificationRules(
      E,
      newRules("created", [
        { actions: ["PutObject", "CopyObject", "CompleteMultipartUpload"], prefix: "in/" },
        { actions: ["PutObject"], prefix: "logs/", suffix: ".txt" },
      ]),
    );
    await store.addNotificationRules(E, newRules("deleted", [{ actions: ["DeleteObject"] }]));
    await store.put(Q, "in/a", Buffer.from("no rules here"));
    await store.put(E, "in/a", Buffer.from("hello"));
    await store.put(E, "logs/x.bin", Buffer.from("suffix does not match"));
    await store.put(E, "other/b", Buffer.from("prefix does not match"));
    assert.equal(await store.put(E, "in/a", Buffer.from("refused"), { onlyIf: { etagDoesNotMatch: [{ type: "wildcard" }] } }), undefined);
    await store.put(E, "in/copy", Buffer.from("hello"), { copySource: { bucket: "src", key: "orig" } });
    const uploadId = await store.createMultipartUpload(E, "in/big");
    const part = await store.uploadPart(E, "in/big", uploadId, 1, Buffer.from("parts"));
    const big = await store.completeMultipartUpload(E, "in/big", uploadId, [part]);
    await store.delete(E, ["in/a", "never-was"]);
    await store.delete(Q, "in/a");

    const before = Date.now();
    const leased = await store.leaseNotifications(100, 60_000, Date.now());
    const bodies = leased.map((m) => ({ queue: m.queueId, account: m.accountId, ...JSON.parse(m.body) }));
    for (const b of bodies) {
      assert.ok(Math.abs(Date.parse(b.eventTime) - before) < 60_000, "eventTime is the change's time");
      delete b.eventTime;
    }
    const etag = md5("hello");
    assert.deepEqual(bodies, [
      { queue: "created", account: ACC, action: "PutObject", bucket: "ev2", object: { key: "in/a", size: 5, eTag: etag } },
      {
        queue: "created",
        account: ACC,
        action: "CopyObject",
        bucket: "ev2",
        object: { key: "in/copy", size: 5, eTag: etag },
        copySource: { bucket: "src", object: "orig" },
      },
      { queue: "created", account: ACC, action: "CompleteMultipartUpload", bucket: "ev2", object: { key: "in/big", size: 5, eTag: big.etag } },
      { queue: "deleted", account: ACC, action: "DeleteObject", bucket: "ev2", object: { key: "in/a" } },
    ]);
    assert.deepEqual(await store.leaseNotifications(100, 60_000, Date.now()), [], "leased messages are not leased again while the lease holds");
    // The relay died before acking: once the lease ends they come back, in order.
    const again = await store.leaseNotifications(2, 60_000, Date.now() + 61_000);
    assert.deepEqual(
      again.map((m) => m.id),
      leased.slice(0, 2).map((m) => m.id),
    );
    await store.ackNotifications(again.map((m) => m.id));
    const rest = await store.leaseNotifications(100, 60_000, Date.now() + 122_000);
    assert.deepEqual(
      rest.map((m) => m.id),
      leased.slice(2).map((m) => m.id),
    );
    await store.ackNotifications(rest.map((m) => m.id));
    assert.deepEqual(await store.leaseNotifications(100, 60_000, Date.now() + 1_000_000), [], "acked messages are gone");
  });
});
