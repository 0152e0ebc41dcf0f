import { DbSmallContentStore } from "../core/content/db-small-store.js";
import { r2OperationMetrics } from "./metrics.js";
import type { ContentStore } from "../core/content/store.js";
import type { AnalyticsDataset } from "../analytics/service.js";
import type { EdgeService, ServiceContext } from "../core/service.js";
import { r2StorageDataset } from "./analytics-dataset.js";
import { createR2BindingHandler, type R2BindingHandler } from "./binding.js";
import type { R2Operation } from "./operations-dataset.js";
import { serveOptions } from "./config.js";
import { R2BodyPolicy } from "./objects/body-policy.js";
import { registerR2Routes } from "./routes.js";
import { readS3Config } from "./s3/config.js";
import { createS3Handler } from "./s3/handler.js";
import { R2_PG_MIGRATIONS } from "./pg-migrations.js";
import { PgR2Store } from "./pg-store.js";
import { R2_SMALL_BODIES, r2Migrations } from "./sqlite-migrations.js";
import { SqliteR2Store } from "./sqlite-store.js";
import type { R2Store } from "./store.js";
import { NotificationRuleIndex } from "./notifications/rules.js";
import { NotificationRelay, type NotificationQueues } from "./notifications/relay.js";
import { R2_BUS_AREA, RULES_NOTICE } from "./notifications/pg-store.js";

export interface R2Service extends EdgeService {
  bindingHandler: R2BindingHandler;
  /** Whether the account has a bucket of that name (an R2 binding must name one). */
  bucketExists(accountId: string, name: string): Promise<boolean>;
  /** Drops the event notification rules that send to a queue Queues deleted. */
  queueDeleted(accountId: string, queueId: string): Promise<void>;
  /** R2's datasets of the GraphQL Analytics API (what its buckets hold). */
  analyticsDatasets: AnalyticsDataset[];
  /** Where each operation (S3 API, binding) is told as it ends: r2OperationsAdaptiveGroups' rollups (platform.ts). */
  attachAnalytics(listener: (e: R2Operation) => void): void;
  /** Gives event notifications their queues (platform.ts, once Queues exists); until then none is found. */
  attachQueues(queues: NotificationQueues): void;
}

/** Hourly sweep: multipart uploads left unfinished for a week, then content files nothing refers to any more. */
const GC_INTERVAL_MS = 60 * 60 * 1000;
const STALE_UPLOAD_MS = 7 * 24 * 60 * 60 * 1000;

/** How often the relay looks at the outbox unwoken (other nodes' writes), and how long it holds what it leased. */
const RELAY_POLL_MS = 1000;
const RELAY_LEASE_MS = 30_000;

/**
 * Small bodies are cached by content id, which a change never reuses: they need no bus. Event notification rules
 * are kept in memory (`index`): on PostgreSQL a node reloads a bucket's rules on another node's notice.
 */
function openR2Store(ctx: ServiceContext, index: NotificationRuleIndex): { store: R2Store; content: ContentStore; pg?: PgR2Store } {
  const pg = ctx.openPostgres("r2", R2_PG_MIGRATIONS);
  if (pg) {
    const content = ctx.content("r2");
    const store = new PgR2Store(pg, content, index, ctx.bus);
    return { store, content, pg: store };
  }
  const db = ctx.openDb("r2", r2Migrations);
  // Embedded, small bodies (R2BodyPolicy.rowBytes) live in r2.sqlite itself, next to the rows that name them.
  const content = new DbSmallContentStore(db, R2_SMALL_BODIES, ctx.content("r2"), R2BodyPolicy.rowBytes);
  return { store: new SqliteR2Store(db, content, index), content };
}

export function createR2Service(ctx: ServiceContext): R2Service {
  const index = new NotificationRuleIndex();
  const { store, content, pg } = openR2Store(ctx, index);
  const log = ctx.log.child({ service: "r2" });
  const metrics = ctx.metrics && r2OperationMetrics(ctx.metrics);
  let queues: NotificationQueues | undefined;
  let relay: NotificationRelay | undefined;
  let unsubscribe: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** Where operations are told (r2OperationsAdaptiveGroups), once platform.ts attaches the rollups. */
  let onOperation: ((e: R2Operation) => void) | undefined;
  const sweep = async () => {
    const aborted = await store.abortStaleUploads(Date.now() - STALE_UPLOAD_MS);
    if (aborted > 0) log.info({ aborted }, "r2 aborted multipart uploads unfinished for 7 days");
    const live = await store.liveContent();
    const removed = await content.gc((id) => live.has(id));
    if (removed > 0) log.info({ removed }, "r2 removed unreferenced content files");
  };
  return {
    name: "r2",
    bindingHandler: createR2BindingHandler(store, log, metrics, () => onOperation),
    bucketExists: async (accountId, name) => (await store.getBucket(accountId, name)) !== undefined,
    queueDeleted: async (accountId, queueId) => {
      await store.deleteQueueNotificationRules(accountId, queueId);
    },
    analyticsDatasets: [r2StorageDataset(store)],
    attachAnalytics(listener) {
      onOperation = listener;
    },
    attachQueues(q) {
      queues = q;
      relay = new NotificationRelay(store, q, log, { pollMs: RELAY_POLL_MS, leaseMs: RELAY_LEASE_MS });
      index.onRecorded = () => relay?.wake();
    },
    registerApi: (app) => registerR2Routes(app, store, () => queues),
    // The S3 API: requests signed with SigV4 (or addressed to the S3 host name) on the edge port.
    handleRaw: createS3Handler({
      store,
      auth: ctx.auth,
      config: readS3Config(ctx.options(serveOptions)),
      log,
      metrics,
      onOperation: (e) => onOperation?.(e),
    }),
    describe: () => ({ s3: ctx.edgeUrl() }),
    async start() {
      if (pg) {
        unsubscribe = ctx.bus.subscribe(R2_BUS_AREA, (event) => {
          const reload =
            event.type === "resync"
              ? store.allNotificationRules().then((all) => index.replaceAll(all))
              : event.what.startsWith(RULES_NOTICE)
                ? reloadBucket(pg, event.what.slice(RULES_NOTICE.length))
                : undefined;
          reload?.catch((err) => log.warn({ err }, "r2 event notification rules could not be reloaded"));
        });
        index.replaceAll(await store.allNotificationRules());
      }
      relay?.start();
      timer = setInterval(() => void sweep().catch((err) => log.warn({ err }, "r2 content sweep failed")), GC_INTERVAL_MS);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      unsubscribe?.();
      await relay?.stop();
    },
  };
}

/** `what` is `<account>/<bucket>` (account ids hold no "/"). */
function reloadBucket(pg: PgR2Store, what: string): Promise<void> {
  const slash = what.indexOf("/");
  return pg.notifications.reload({ accountId: what.slice(0, slash), bucketName: what.slice(slash + 1) });
}
