import type { ServerResponse } from "node:http";
import type { GroupedDatasetSpec, Rollups } from "../analytics/service.js";

/** The rollup dataset of R2's operations, per account. */
export const R2_OPERATIONS = "r2_operations";

/** One R2 operation, through the S3 API or a Worker's binding, as R2 saw it end. */
export interface R2Operation {
  accountId: string;
  /** "" for an operation on no bucket (ListBuckets). */
  bucketName: string;
  /** The hosted action names: `GetObject`, `PutObject`, `ListObjectsV2`, `DeleteObject`, `CreateMultipartUpload`… */
  actionType: string;
  responseStatusCode: number;
  /** The size of the object an answer carries (GetObject, HeadObject), else 0. */
  responseObjectSize: number;
}

/** What a Worker's binding call is called in the hosted dataset. */
export const BINDING_ACTIONS: Readonly<Record<string, string>> = {
  head: "HeadObject",
  get: "GetObject",
  list: "ListObjects",
  put: "PutObject",
  delete: "DeleteObject",
  createMultipartUpload: "CreateMultipartUpload",
  uploadPart: "UploadPart",
  completeMultipartUpload: "CompleteMultipartUpload",
  abortMultipartUpload: "AbortMultipartUpload",
};

/** `success`, `userError` (4xx) or `internalError` (5xx), as hosted's `actionStatus`. */
const actionStatus = (status: number) => (status >= 500 ? "internalError" : status >= 400 ? "userError" : "success");

/** Records one operation into the rollups. */
export function recordR2Operation(rollups: Rollups, e: R2Operation, atMs = Date.now()): void {
  rollups.record(
    R2_OPERATIONS,
    e.accountId,
    e.accountId,
    atMs,
    [e.bucketName, e.actionType, actionStatus(e.responseStatusCode), String(e.responseStatusCode)],
    [e.responseObjectSize],
  );
}

/** Calls `listener` once `res` ends (or its client leaves) with the operation as it ended; `objectSize` read then. */
export function whenOperationEnds(
  res: ServerResponse,
  what: () => { accountId: string; bucketName: string; actionType: string; objectSize: number } | undefined,
  listener: (e: R2Operation) => void,
): void {
  res.once("close", () => {
    const w = what();
    if (!w) return;
    // A client that left before the answer ended is counted with the status it was being sent.
    listener({
      accountId: w.accountId,
      bucketName: w.bucketName,
      actionType: w.actionType,
      responseStatusCode: res.statusCode,
      responseObjectSize: w.objectSize,
    });
  });
}

/**
 * `r2OperationsAdaptiveGroups` on `viewer.accounts` (permission `analytics_read`): every S3 API request that was
 * authenticated and every Worker binding call, `sum { requests responseObjectSize }` by `dimensions { bucketName
 * actionType actionStatus responseStatusCode datetime… }`.
 */
export const r2OperationsSpec: GroupedDatasetSpec = {
  field: "r2OperationsAdaptiveGroups",
  scope: "account",
  typeName: "AccountR2OperationsAdaptiveGroups",
  dataset: R2_OPERATIONS,
  permission: "analytics_read",
  count: true,
  dimensions: {
    bucketName: { column: 0, type: "String" },
    actionType: { column: 1, type: "String" },
    actionStatus: { column: 2, type: "String" },
    responseStatusCode: { column: 3, type: "Int" },
  },
  sums: { requests: { from: "count" }, responseObjectSize: { from: 0 } },
};
