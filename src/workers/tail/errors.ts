import { EdgeError } from "../../core/errors.js";
import { WorkersCodes } from "../errors.js";

/** A tail session that does not exist (never did, was deleted, or expired). */
const TAIL_NOT_FOUND = 10069;

/** The tail refusals; every message is written here once. */
export const TailErrors = {
  sessionNotFound: () => new EdgeError(404, TAIL_NOT_FOUND, "This tail session does not exist (it was deleted or it expired)"),
  alreadyConnected: () => new EdgeError(409, WorkersCodes.validation, "This tail session already has a client connected"),
  protocol: (protocol: string) =>
    new EdgeError(400, WorkersCodes.validation, `A tail session's WebSocket must be a version 13 handshake asking for the subprotocol ${protocol}`),
  tooMany: (limit: number) => new EdgeError(429, WorkersCodes.validation, `This Worker has ${limit} tail sessions open, the most it may have; close one first`),
};
