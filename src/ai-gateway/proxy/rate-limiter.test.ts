import { MemoryRateLimiter } from "./rate-limiter.js";
import { describeRateLimiter } from "./rate-limiter.contract.js";

describeRateLimiter("in memory", async () => ({ store: new MemoryRateLimiter(), close() {} }));
