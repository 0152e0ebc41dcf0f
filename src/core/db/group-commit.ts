import { unreachableDependency } from "../errors/dependency.js";

/** How much one commit carries at most. */
export interface GroupCommitLimits {
  /** Writes per commit. */
  maxItems: number;
  /** Bytes per commit (the sum of the items' `bytes`); a single bigger item still goes, alone. */
  maxBytes: number;
}

/**
 * What a commit did with each item of its batch, in order: undefined when it was written, or the refusal for that
 * item alone (written nowhere). A commit that throws wrote nothing at all.
 */
export type CommitOutcomes = readonly (Error | undefined)[];

interface Pending<T> {
  item: T;
  bytes: number;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Group commit: writes that arrive while a commit is in flight wait for it, then go together in the next one (one
 * transaction, one WAL flush for all of them); a write that arrives while none is in flight goes at once, so a lone
 * writer waits for nothing more than before. Each write's promise settles only after the commit that carried it
 * returned, i.e. after it is durable. Batches keep arrival order, so the caller can make the last write of a key win
 * within one, as separate commits would.
 *
 * A commit that throws wrote nothing (it is one transaction). When the dependency is unreachable every write of the
 * batch is refused with that error (each request gets its 503; trying them one by one would only wait longer).
 * Any other error is a write the database refused (a constraint, a deadlock with another node): the batch is then
 * committed again one write at a time, in arrival order, so only the write at fault fails.
 *
 * Memory: the queue holds the items the waiting requests already hold (no copies); a commit carries at most
 * `limits` of them.
 */
export class GroupCommit<T> {
  private queue: Pending<T>[] = [];
  private flushing = false;
  /** Writes submitted, commits made for them, and writes committed again alone after their batch failed. */
  readonly stats = { writes: 0, commits: 0, retriedAlone: 0 };

  constructor(
    private readonly commit: (items: readonly T[]) => Promise<CommitOutcomes>,
    private readonly limits: GroupCommitLimits,
  ) {}

  /** Resolves once `item` is committed; rejects with its own refusal or with the error of the commit that carried it. */
  submit(item: T, bytes: number): Promise<void> {
    this.stats.writes++;
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, bytes, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length) await this.commitBatch(this.takeBatch());
    } finally {
      this.flushing = false;
    }
  }

  /** The longest prefix of the queue within the limits (at least one write). */
  private takeBatch(): Pending<T>[] {
    let n = 0;
    let bytes = 0;
    while (n < this.queue.length && n < this.limits.maxItems) {
      bytes += this.queue[n]!.bytes;
      if (n > 0 && bytes > this.limits.maxBytes) break;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private async commitBatch(batch: readonly Pending<T>[]): Promise<void> {
    let outcomes: CommitOutcomes;
    try {
      outcomes = await this.run(batch);
    } catch (err) {
      if (batch.length === 1 || unreachableDependency(err)) {
        for (const p of batch) p.reject(err);
        return;
      }
      this.stats.retriedAlone += batch.length;
      for (const p of batch) {
        try {
          settle(p, (await this.run([p]))[0]);
        } catch (alone) {
          p.reject(alone);
        }
      }
      return;
    }
    batch.forEach((p, i) => settle(p, outcomes[i]));
  }

  private async run(batch: readonly Pending<T>[]): Promise<CommitOutcomes> {
    this.stats.commits++;
    return this.commit(batch.map((p) => p.item));
  }
}

function settle<T>(p: Pending<T>, outcome: Error | undefined): void {
  if (outcome) p.reject(outcome);
  else p.resolve();
}
