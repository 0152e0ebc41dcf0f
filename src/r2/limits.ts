/** R2's limits, as the hosted platform sets them (errors.ts words its refusals with them, the stores and routes check them). */
export const R2Limits = {
  maxKeyBytes: 1024,
  maxCustomMetadataBytes: 2048,
  maxListLimit: 1000,
  /** R2's single PUT ceiling: 5 GiB minus 5 MiB. */
  maxObjectBytes: 5 * 1024 ** 3 - 5 * 1024 ** 2,
  minPartBytes: 5 * 1024 ** 2,
  maxParts: 10_000,
  maxDeleteKeys: 1000,
  maxCorsRules: 100,
} as const;

export const BUCKET_NAME_RE = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
