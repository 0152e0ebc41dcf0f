import { pino, type Logger, type DestinationStream } from "pino";

export type { Logger };

/** Header and field names whose values must never reach a log line. */
export const REDACT_PATHS = [
  "req.headers.authorization",
  'req.headers["x-auth-key"]',
  'req.headers["gw-aig-authorization"]',
  'req.headers["gw-aig-token"]',
  'req.headers["cf-aig-authorization"]',
  'req.headers["cf-aig-token"]',
  'req.headers["x-api-key"]',
  'req.headers["api-key"]',
  'req.headers["x-goog-api-key"]',
  "*.token",
  "*.value",
  "*.secret",
  "*.text",
];

export interface LoggerOptions {
  level?: string;
  destination?: DestinationStream;
}

/** The platform's one logger: JSON lines, one per event, with the request id on every request line. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino(
    {
      level: opts.level ?? process.env.EDGE_LOG_LEVEL ?? "info",
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    opts.destination ?? pino.destination({ dest: 1, sync: false }),
  );
}
