/** The limits every KV entry and request obeys, whichever door (API, --local CLI, worker binding) it came through. */
export const KV_LIMITS = {
  keyBytes: 512,
  valueBytes: 25 * 1024 * 1024,
  metadataBytes: 1024,
  minTtlSeconds: 60,
  titleBytes: 512,
  /** A namespace id the --local CLI is given (the API makes its own, 32 hex characters). */
  namespaceIdChars: 64,
  listLimit: 1000,
  bulkWriteEntries: 10_000,
  /** The JSON body of a bulk write or delete (10,000 entries of up to ~10 KB each). */
  bulkBodyBytes: 100 * 1024 * 1024,
  bulkGetKeys: 100,
  /** The JSON body of a worker binding's bulk get (100 keys). */
  bulkGetBodyBytes: 1024 * 1024,
  /** Values up to this size live inline in the database; bigger ones in the content store. */
  inlineValueBytes: 64 * 1024,
} as const;
