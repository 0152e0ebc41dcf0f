import type { ServerResponse } from "node:http";
import type { GroupedDatasetSpec, Rollups } from "../analytics/service.js";

/** The rollup dataset of Workers' invocations, per account. */
export const WORKERS_INVOCATIONS = "workers_invocations";

/**
 * How an invocation ended, in the hosted `status` values: `success` (the Worker answered, whatever its HTTP status),
 * `scriptThrewException` (workerd's answer to an uncaught exception), `clientDisconnected` (the client left before
 * the answer ended), `internalError` (the platform could not reach the Worker's process: its 502/503/504).
 */
export type InvocationStatus = "success" | "scriptThrewException" | "clientDisconnected" | "internalError";

/** One invocation of a script through the edge (or a service binding), as the Workers area saw it end. */
export interface WorkerInvocation {
  accountId: string;
  scriptName: string;
  /** The version that answered (the live one; during a gradual deployment, either). */
  scriptVersion: string;
  status: InvocationStatus;
  /** From the request's arrival to the answer's end, in microseconds. */
  wallTimeUs: number;
}

/** One subrequest (a fetch() to anywhere but a binding) a script made. */
export interface WorkerSubrequest {
  accountId: string;
  scriptName: string;
}

/** The length of workerd's own body for an uncaught exception ("Internal Server Error", without a content-type). */
const WORKERD_EXCEPTION_BODY = "Internal Server Error".length;

/**
 * Whether an answer's head is workerd's own for an uncaught exception: 500, no content-type, its 21-byte body (a
 * script's own 500 has a content-type, or another body).
 */
export function isWorkerdException(status: number, headers: readonly string[]): boolean {
  if (status !== 500) return false;
  let length = -1;
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i] === "content-type") return false;
    if (headers[i] === "content-length") length = Number(headers[i + 1]);
  }
  return length === WORKERD_EXCEPTION_BODY;
}

/** The status of an invocation once its answer ended (see InvocationStatus). */
export function invocationStatus(res: ServerResponse, answer: { edgeAnswered: boolean; threw: boolean }): InvocationStatus {
  if (answer.edgeAnswered) return "internalError";
  if (answer.threw) return "scriptThrewException";
  if (!res.writableFinished) return "clientDisconnected";
  return "success";
}

/** Records one invocation (the Workers area calls it as each ends). */
export function recordInvocation(rollups: Rollups, e: WorkerInvocation, atMs = Date.now()): void {
  const errors = e.status === "scriptThrewException" || e.status === "internalError" ? 1 : 0;
  rollups.record(WORKERS_INVOCATIONS, e.accountId, e.accountId, atMs, [e.scriptName, e.status, e.scriptVersion], [errors, 0, e.wallTimeUs]);
}

/**
 * Records one subrequest: a row of its own with no invocation (count 0), under status `success` and no version, as
 * a subrequest is not tied to the invocation that made it here. Summed by script, minute and account, it adds up.
 */
export function recordSubrequest(rollups: Rollups, e: WorkerSubrequest, atMs = Date.now()): void {
  rollups.record(WORKERS_INVOCATIONS, e.accountId, e.accountId, atMs, [e.scriptName, "success", ""], [0, 1, 0], 0);
}

/**
 * `workersInvocationsAdaptive` on `viewer.accounts` (permission `analytics_read`, hosted's Account Analytics Read): `sum { requests errors subrequests wallTime }` and `dimensions
 * { scriptName status scriptVersion datetime… }`. CPU time and quantiles are not measured here (workerd reports CPU
 * time only to a tail worker, which costs every invocation; the rollups keep sums, not distributions): the hosted
 * `quantiles { … }` and `sum { cpuTimeUs }` are in the schema, so hosted queries validate, and refused by name.
 */
export const workersInvocationsSpec: GroupedDatasetSpec = {
  field: "workersInvocationsAdaptive",
  scope: "account",
  typeName: "AccountWorkersInvocationsAdaptive",
  dataset: WORKERS_INVOCATIONS,
  permission: "analytics_read",
  count: false,
  dimensions: {
    scriptName: { column: 0, type: "String" },
    status: { column: 1, type: "String" },
    scriptVersion: { column: 2, type: "String" },
  },
  sums: {
    requests: { from: "count" },
    errors: { from: 0 },
    subrequests: { from: 1 },
    wallTime: { from: 2 },
  },
  unmeasured: {
    quantiles: {
      fields: ["cpuTime", "wallTime", "duration", "requestDuration", "responseBodySize"].flatMap((m) =>
        ["P25", "P50", "P75", "P90", "P99", "P999"].map((p) => `${m}${p}`),
      ),
      why: "the per-minute rollups keep counts and sums, not distributions (sum.wallTime / sum.requests is the mean wall time)",
    },
    sums: { cpuTimeUs: "workerd reports CPU time only to a tail worker, which would cost every invocation; sum.wallTime is measured" },
  },
};
