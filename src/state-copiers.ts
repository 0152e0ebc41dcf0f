import { aiGatewayCopier } from "./ai-gateway/copy.js";
import { identityCopier } from "./core/auth/copy.js";
import type { AreaCopier, NodeOnlyState } from "./core/state-copy/area.js";
import { d1NodeOnly } from "./d1/copy.js";
import { dnsCopier, dnsNodeOnly } from "./dns/copy.js";
import { kvCopier } from "./kv/copy.js";
import { queuesCopier } from "./queues/copy.js";
import { r2Copier } from "./r2/copy.js";
import { workerAssetsCopier } from "./workers/assets/copy.js";
import { workersCopier, workersNodeOnly } from "./workers/copy.js";
import { workersLogsCopier } from "./workers/logs/copy.js";

/**
 * Every area `edgecli state copy` carries between a state directory and PostgreSQL + a bucket, in this order. An
 * area joins with its own `copy.ts` (core/state-copy/area.ts says what it declares) and one line here.
 */
export const AREA_COPIERS: readonly AreaCopier[] = [
  identityCopier,
  dnsCopier,
  kvCopier,
  r2Copier,
  workersCopier,
  workerAssetsCopier,
  workersLogsCopier,
  queuesCopier,
  aiGatewayCopier,
];

/** What stays on one machine (no PostgreSQL store yet): a copy into PostgreSQL refuses while the source holds any. */
export const NODE_ONLY_STATE: readonly NodeOnlyState[] = [...dnsNodeOnly, ...workersNodeOnly, ...d1NodeOnly];
