import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { startTestPlatform, type TestPlatform } from "../../core/testing/platform.js";
import { awsCli, awsCliMissing, type S3Credentials } from "./testing/s3.js";

/** Debian's aws CLI 2.9 against the platform, as a user would run it with the credentials `edgecli r2 credentials` prints. */
const md5 = (b: Buffer) => createHash("md5").update(b).digest("hex");
const run = promisify(execFile);

describe("the aws CLI", { skip: awsCliMissing() }, () => {
  let p: TestPlatform;
  let creds: S3Credentials;
  let dir: string;
  const aws = async (...args: string[]) => {
    const r = await awsCli(p, creds, args, { cwd: dir });
    assert.equal(r.code, 0, `aws ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    p = await startTestPlatform();
    // The credentials a user copies from `edgecli r2 credentials`.
    const printed = await p.cli(["r2", "credentials", "--json"]);
    assert.equal(printed.code, 0, printed.stderr);
    const view = JSON.parse(printed.stdout);
    assert.equal(view.endpoint, p.url);
    creds = { accessKeyId: view.access_key_id, secretAccessKey: view.secret_access_key };
    dir = mkdtempSync(join(tmpdir(), "s3-awscli-"));
  });
  after(async () => {
    await p?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test("mb, cp of a 20 MiB file up (multipart) and down with the same MD5, ls, get-object --range, presign + curl, rm --recursive, rb", async () => {
    assert.match(await aws("s3", "mb", "s3://cli-bucket"), /make_bucket: cli-bucket/);
    const big = randomBytes(20 * 1024 * 1024);
    writeFileSync(join(dir, "big.bin"), big);
    writeFileSync(join(dir, "small.txt"), "small file\n");
    assert.match(await aws("s3", "cp", "big.bin", "s3://cli-bucket/dir/big.bin"), /upload: .\/big.bin to s3:\/\/cli-bucket\/dir\/big.bin/);
    await aws("s3", "cp", "small.txt", "s3://cli-bucket/dir/sub/small.txt");

    // Above 8 MiB the CLI uploads in parts: the object's ETag says how many.
    const head = JSON.parse(await aws("s3api", "head-object", "--bucket", "cli-bucket", "--key", "dir/big.bin"));
    assert.match(head.ETag, /^"[0-9a-f]{32}-3"$/);
    assert.equal(head.ContentLength, big.length);

    await aws("s3", "cp", "s3://cli-bucket/dir/big.bin", "down.bin");
    assert.equal(md5(readFileSync(join(dir, "down.bin"))), md5(big));

    const top = await aws("s3", "ls", "s3://cli-bucket/");
    assert.match(top, /PRE dir\//);
    const all = await aws("s3", "ls", "--recursive", "s3://cli-bucket/");
    assert.match(all, /20971520 dir\/big\.bin/);
    assert.match(all, /11 dir\/sub\/small\.txt/);
    assert.match(await aws("s3", "ls"), /cli-bucket/);

    const ranged = JSON.parse(await aws("s3api", "get-object", "--bucket", "cli-bucket", "--key", "dir/big.bin", "--range", "bytes=1000-1999", "part.bin"));
    assert.equal(ranged.ContentRange, `bytes 1000-1999/${big.length}`);
    assert.ok(readFileSync(join(dir, "part.bin")).equals(big.subarray(1000, 2000)));

    const url = (await aws("s3", "presign", "s3://cli-bucket/dir/sub/small.txt", "--expires-in", "300")).trim();
    const fetched = await run("curl", ["-sS", "-w", "\n%{http_code}", url]);
    assert.equal(fetched.stdout, "small file\n\n200");

    assert.match(await aws("s3", "rm", "--recursive", "s3://cli-bucket/dir/"), /delete: s3:\/\/cli-bucket\/dir\/big\.bin/);
    assert.equal((await aws("s3", "ls", "--recursive", "s3://cli-bucket/")).trim(), "");
    assert.match(await aws("s3", "rb", "s3://cli-bucket"), /remove_bucket: cli-bucket/);
    assert.doesNotMatch(await aws("s3", "ls"), /cli-bucket/);
  });

  test("errors reach the CLI as S3 errors", async () => {
    const missing = await awsCli(p, creds, ["s3", "cp", "s3://no-such-bucket/x", "x"], { cwd: dir });
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /404|NoSuchBucket|Not Found/);
    const wrong = await awsCli(p, { ...creds, secretAccessKey: "0".repeat(64) }, ["s3", "ls"], { cwd: dir });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /SignatureDoesNotMatch/);
    await aws("s3", "mb", "s3://full-bucket");
    writeFileSync(join(dir, "f.txt"), "x");
    await aws("s3", "cp", "f.txt", "s3://full-bucket/f.txt");
    const notEmpty = await awsCli(p, creds, ["s3", "rb", "s3://full-bucket"], { cwd: dir });
    assert.notEqual(notEmpty.code, 0);
    assert.match(notEmpty.stderr, /BucketNotEmpty/);
  });
});
