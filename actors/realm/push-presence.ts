// Which of a message's push candidates are idle (Zulip's
// get_active_presence_idle_user_ids: no "active" presence within
// OFFLINE_THRESHOLD_SECS). Internal: asked by the push worker
// (cluster/push-worker.ts) once per message, for the candidates that have a queue.

import { errors } from "../errors.ts";
import { realmSetting } from "./defaults.ts";
import type { RealmHandler } from "./handler.ts";

/** Zulip's OFFLINE_THRESHOLD_SECS. */
const ACTIVE_WITHIN_SECS = 140;

const presenceIdle: RealmHandler<"presenceIdle"> = (state, args, ctx, caller) => {
  if (caller) throw errors.accessDenied();
  const now = Math.floor(ctx.now() / 1000);
  const idle = args.user_ids.filter((id) => {
    const p = state.presence.get(id);
    return p === undefined || now - p.activeTimestamp > ACTIVE_WITHIN_SECS;
  });
  return { reply: { idle } };
};

/** The realm's settings a notification's payload follows (require_e2ee_push_notifications, level 409). */
const pushSettings: RealmHandler<"pushSettings"> = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  return { reply: { requireE2ee: realmSetting(state, "require_e2ee_push_notifications") === true } };
};

export const pushPresenceHandlers = { presenceIdle, pushSettings };
