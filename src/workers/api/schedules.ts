import type { FastifyInstance } from "fastify";
import { ok } from "../../core/http/envelope.js";
import { WorkersErrors } from "../errors.js";
import type { Schedule, WorkersStore } from "../store.js";
import { cronProblem } from "../triggers/cron.js";

/** Cron triggers an account may have across its Workers (the hosted platform's limit on paid plans). */
export const CRON_TRIGGERS_PER_ACCOUNT = 250;

export interface ScheduleRouteDeps {
  store: WorkersStore;
  /** Called after the triggers changed, so the clock reads them again. */
  triggersChanged(): Promise<void>;
}

type Params = { account_id: string; name: string };

const view = (schedules: Schedule[]) => ({
  schedules: schedules.map((s) => ({ cron: s.cron, created_on: s.createdOn, modified_on: s.modifiedOn })),
});

/** The crons of a PUT body (`[{"cron": "..."}]`), each checked, trimmed and given once; refused whole otherwise. */
function cronsOf(body: unknown): string[] {
  if (!Array.isArray(body) || body.length > CRON_TRIGGERS_PER_ACCOUNT) {
    throw Array.isArray(body) ? WorkersErrors.tooManySchedules(CRON_TRIGGERS_PER_ACCOUNT, body.length) : WorkersErrors.schedulesBody();
  }
  const crons = body.map((item, i) => {
    const cron = (item as { cron?: unknown } | null)?.cron;
    if (typeof item !== "object" || item === null || Array.isArray(item) || typeof cron !== "string") throw WorkersErrors.schedulesBody();
    const problem = cronProblem(cron);
    if (problem) throw WorkersErrors.invalidCron(i, cron, problem);
    return cron.trim();
  });
  return [...new Set(crons)];
}

/** `GET/PUT /accounts/{a}/workers/scripts/{name}/schedules`: a script's cron triggers, as the hosted API has them. */
export function registerScheduleRoutes(app: FastifyInstance, deps: ScheduleRouteDeps): void {
  const path = "/accounts/:account_id/workers/scripts/:name/schedules";
  app.get(path, { config: { permission: "workers_read" } }, async (req) => {
    const p = req.params as Params;
    return ok(view(await deps.store.schedules(p.account_id, p.name)));
  });
  app.put(path, { config: { permission: "workers_edit" } }, async (req) => {
    const p = req.params as Params;
    const crons = cronsOf(req.body);
    const schedules = await deps.store.setSchedules(p.account_id, p.name, crons, CRON_TRIGGERS_PER_ACCOUNT);
    await deps.triggersChanged();
    return ok(view(schedules));
  });
}
