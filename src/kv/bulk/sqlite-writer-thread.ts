// The KV bulk writer's thread (started by sqlite-writer.ts). Each bulk put's body arrives here in chunks; parsing,
// validation and the SQLite work (staging values, the final commit, the WAL checkpoints that follow) all run here,
// on this thread's own connection, so none of it runs on the platform's event loop. Every transaction waits for a
// grant from the main thread, where it takes its turn with the store's other writes; content-store files (big
// values) stay the main thread's business too.
import { parentPort, workerData } from "node:worker_threads";
import { openDatabase } from "../../core/db/sqlite.js";
import { EdgeError } from "../../core/errors.js";
import { KvErrors } from "../errors.js";
import { KV_LIMITS } from "../limits.js";
import { KV_MIGRATIONS } from "../sqlite-migrations.js";
import { jsonArrayElements } from "./json-array-stream.js";
import { bulkPut, type BulkPutIo } from "./sqlite-put.js";
import { BulkStaging } from "./sqlite-staging.js";
import type { FromBulkThread, ToBulkThread } from "./sqlite-writer.js";

const port = parentPort!;
const { file } = workerData as { file: string };
const staging = new BulkStaging(openDatabase(file, KV_MIGRATIONS));
const post = (msg: FromBulkThread, transfer: ArrayBuffer[] = []) => port.postMessage(msg, transfer);

/** Answers the main thread owes this thread (a lock grant, a content id, content deleted), by ticket. */
const awaiting = new Map<number, { resolve(v: string | undefined): void; reject(e: Error): void }>();
let tickets = 0;
function ask(ticket: number, msg: FromBulkThread, transfer: ArrayBuffer[] = []): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    awaiting.set(ticket, { resolve, reject });
    post(msg, transfer);
  });
}

/** Runs `fn` (one transaction) once the main thread grants this thread the store's write turn. */
async function exclusive<T>(bulk: number, fn: () => T): Promise<T> {
  const ticket = ++tickets;
  await ask(ticket, { kind: "lock", bulk, ticket });
  try {
    return fn();
  } finally {
    post({ kind: "unlock", bulk, ticket });
  }
}

/** A bulk put's body as it arrives: each chunk is acknowledged when taken, so the main thread sends the next. */
class Chunks implements AsyncIterable<Uint8Array> {
  private readonly queued: Uint8Array[] = [];
  private ended = false;
  private failure?: Error;
  private wake?: () => void;

  constructor(private readonly bulk: number) {}

  push(chunk: Uint8Array): void {
    this.queued.push(chunk);
    this.wake?.();
  }

  end(failure?: Error): void {
    this.ended = true;
    this.failure = failure;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const chunk = this.queued.shift();
      if (chunk) {
        post({ kind: "ack", bulk: this.bulk });
        yield chunk;
      } else if (this.failure) throw this.failure;
      else if (this.ended) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

const sessions = new Map<number, Chunks>();

function open(bulk: number, namespaceId: string): void {
  const chunks = new Chunks(bulk);
  sessions.set(bulk, chunks);
  const io: BulkPutIo = {
    exclusive: (fn) => exclusive(bulk, fn),
    async putContent(value) {
      // A copy of its own, so its memory can move to the main thread instead of being copied again.
      const copy = new Uint8Array(value);
      const ticket = ++tickets;
      return (await ask(ticket, { kind: "putContent", bulk, ticket, value: copy }, [copy.buffer]))!;
    },
    async dropContent(ids) {
      if (!ids.length) return;
      const ticket = ++tickets;
      await ask(ticket, { kind: "dropContent", bulk, ticket, ids: [...ids] });
    },
  };
  bulkPut(staging, io, namespaceId, jsonArrayElements(chunks, KV_LIMITS.bulkBodyBytes)).then(
    (count) => post({ kind: "done", bulk, count }),
    (err: Error) =>
      post(
        err instanceof EdgeError ? { kind: "failed", bulk, refusal: { status: err.status, errors: err.errors } } : { kind: "failed", bulk, error: err.message },
      ),
  );
}

port.on("message", (msg: ToBulkThread) => {
  switch (msg.op) {
    case "open":
      return open(msg.bulk, msg.namespaceId);
    case "chunk":
      return sessions.get(msg.bulk)?.push(msg.data);
    case "end":
      // A body cut short is the client's doing: a 400 it will likely never read, not a server error.
      sessions.get(msg.bulk)?.end(msg.error === undefined ? undefined : KvErrors.bodyUnreadable(msg.error));
      return sessions.delete(msg.bulk);
    case "granted":
    case "contentDropped":
    case "contentStored":
      awaiting.get(msg.ticket)?.resolve(msg.op === "contentStored" ? msg.id : undefined);
      return awaiting.delete(msg.ticket);
    case "contentFailed":
      awaiting.get(msg.ticket)?.reject(new Error(msg.error));
      return awaiting.delete(msg.ticket);
    case "abandonLeftovers":
      void exclusive(0, () => staging.abandonLeftovers()).then((n) => post({ kind: "leftovers", count: n }));
      return;
  }
});
