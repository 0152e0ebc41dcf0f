import { EdgeError } from "../core/errors.js";
import { QUEUES_LIMITS } from "./limits.js";

/** Queues' error codes: 11000 (not found) and 11009 (name taken) as the hosted API answers them, the others ours. */
export const QueuesCodes = {
  badRequest: 11001,
  queueNotFound: 11000,
  nameTaken: 11009,
  consumerNotFound: 11004,
  consumerExists: 11005,
  tooLarge: 11010,
  scriptNotFound: 11006,
  backlogFull: 11011,
  /** A bug, as the queue binding answers it (the hosted binding's internal error code). */
  internal: 15000,
} as const;

const badRequest = (message: string) => new EdgeError(400, QueuesCodes.badRequest, message);

/** Queues' refusals, each message written once: the store, routes, binding and CLI throw these. */
export const QueuesErrors = {
  internal: () => new EdgeError(500, QueuesCodes.internal, "internal error"),
  queueNotFound: () => new EdgeError(404, QueuesCodes.queueNotFound, "Queue does not exist"),
  queueNamed: (name: string) => new EdgeError(404, QueuesCodes.queueNotFound, `Queue "${name}" does not exist in this account`),
  nameTaken: (name: string) => new EdgeError(409, QueuesCodes.nameTaken, `A queue named "${name}" already exists in this account`),
  nameInvalid: () =>
    badRequest(`A queue name must be 1-${QUEUES_LIMITS.nameChars} characters: lowercase letters, digits and "-", not starting or ending with "-"`),
  tooManyQueues: () => badRequest(`An account may have at most ${QUEUES_LIMITS.queuesPerAccount} queues`),
  body: (why: string) => badRequest(`The request body is invalid: ${why}`),
  consumerNotFound: () => new EdgeError(404, QueuesCodes.consumerNotFound, "Consumer does not exist on this queue"),
  consumerExists: (script: string) => new EdgeError(409, QueuesCodes.consumerExists, `The Worker "${script}" already consumes this queue`),
  oneWorkerConsumer: () => new EdgeError(409, QueuesCodes.consumerExists, "This queue already has a consumer: a queue has one consumer at a time"),
  scriptNotFound: (script: string) => new EdgeError(404, QueuesCodes.scriptNotFound, `The Worker "${script}" does not exist in this account`),
  deadLetterItself: () => badRequest("A queue cannot be its own dead letter queue"),
  messageTooLarge: () => new EdgeError(413, QueuesCodes.tooLarge, `A message may be at most ${QUEUES_LIMITS.messageBytes} bytes`),
  batchTooLarge: () =>
    new EdgeError(
      413,
      QueuesCodes.tooLarge,
      `A batch may hold at most ${QUEUES_LIMITS.batchMessages} messages of at most ${QUEUES_LIMITS.batchBytes} bytes together`,
    ),
  /**
   * The queue's backlog would pass the platform's cap. The hosted platform documents only the words ("Storage Limit
   * Exceeded" from send() and sendBatch()), which workerd shows as `Queue send failed: <status text>`: the message
   * starts with them. Its status and code are not documented: 413 and 11011 are ours.
   */
  backlogFull: (maxBytes: number) =>
    new EdgeError(
      413,
      QueuesCodes.backlogFull,
      `Storage Limit Exceeded: this queue's backlog may hold at most ${maxBytes} bytes of messages; consume or purge some before sending more`,
    ),
  emptyBatch: () => badRequest("A batch must hold at least one message"),
  delay: () => badRequest(`delay_seconds must be a whole number of seconds from 0 to ${QUEUES_LIMITS.delaySeconds}`),
  contentType: (type: string) => badRequest(`Unsupported content type "${type}": use json, text, bytes or v8`),
  purgeUnconfirmed: () => badRequest("A purge deletes every message of the queue for good: confirm it with delete_messages_permanently: true"),
  noPullConsumer: () => badRequest("This queue has no HTTP pull consumer: add one (type http_pull) before pulling"),
} as const;
