import { randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import { newTestCredentials, startTestPlatform, type TestPlatform } from "./platform.js";
import { awsEnv, testBucket, testDatabase } from "./services.js";

/**
 * Two `edgecli serve` nodes on one fresh PostgreSQL database and one bucket (the same credentials and secrets key),
 * disposed after the test, both started with `args`; undefined when the test was skipped for a missing service.
 */
export async function startTwoNodes(t: TestContext, args: string[] = []): Promise<[TestPlatform, TestPlatform] | undefined> {
  return (await startTwoNodesOn(t, args))?.nodes;
}

/** startTwoNodes, with the URL of the database the nodes share (for a test that writes there behind their backs). */
export async function startTwoNodesOn(t: TestContext, args: string[] = []): Promise<{ nodes: [TestPlatform, TestPlatform]; databaseUrl: string } | undefined> {
  const db = await testDatabase(t);
  const bucket = db && (await testBucket(t));
  if (!db || !bucket) return undefined;
  const credentials = newTestCredentials();
  const env = {
    EDGE_DATABASE_URL: db.url,
    EDGE_OBJECT_STORE_URL: bucket.url,
    EDGE_SECRETS_KEY: randomBytes(32).toString("base64"),
    ...awsEnv(bucket.server),
  };
  const nodes: TestPlatform[] = [];
  t.after(() => Promise.all(nodes.map((n) => n.dispose())));
  nodes.push(await startTestPlatform({ env, credentials, args }));
  nodes.push(await startTestPlatform({ env, credentials, args }));
  return { nodes: [nodes[0]!, nodes[1]!], databaseUrl: db.url };
}
