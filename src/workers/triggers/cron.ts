import { Cron } from "croner";

/** The longest cron expression taken (a bound on the work one costs; real ones are a few dozen characters). */
export const CRON_MAX_LENGTH = 100;

/**
 * A cron expression as the hosted platform takes it: five fields (minute, hour, day of month, month, day of week),
 * read in UTC, with `*`, `,`, `-`, `/`, month and day names, and `L`, `W`, `#`; no seconds field and no `@hourly`
 * nicknames. croner (a maintained, dependency-free parser) does the reading and the next-tick arithmetic.
 */
function parse(cron: string): Cron {
  return new Cron(cron, { timezone: "UTC", paused: true });
}

/** Why `cron` cannot be a trigger, or undefined when it can. */
export function cronProblem(cron: string): string | undefined {
  if (cron.length > CRON_MAX_LENGTH) return `longer than ${CRON_MAX_LENGTH} characters`;
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 || fields[0] === "") return "a cron expression has five fields (minute hour day-of-month month day-of-week)";
  let parsed: Cron;
  try {
    parsed = parse(cron);
  } catch (e) {
    return (e as Error).message.replace(/^CronPattern: /, "");
  }
  if (!parsed.nextRun(new Date())) return "it never fires";
  return undefined;
}

/** The first tick of `cron` strictly after `after` (UTC), or undefined when there is none. */
export function nextTick(cron: string, after: Date): Date | undefined {
  return parse(cron).nextRun(after) ?? undefined;
}
