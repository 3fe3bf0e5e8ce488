// A user's status as others read it, alert words and muted users (Zulip's
// zerver/views/presence.py get_status_backend, views/alert_words.py,
// views/muted_users.py): parse, call the actors, reply.

import { unreadRows } from "../received.ts";
import { realmRef, userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { c, defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";

/** Zulip's MAX_ALERT_WORD_LENGTH, counted in code points before stripping. */
const ALERT_WORD_MAX = 100;

/** A `<int:...>` path segment: digits or no route; past our ids, an unknown user. */
function pathId(raw: string): number {
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

function own(req: RouteRequest) {
  return userRef(req.caller!.realmId, req.caller!.userId);
}

const getStatus = defineRoute({
  method: "GET",
  path: "/users/:user_id/status",
  auth: "required",
  params: {},
  async handler(req) {
    const userId = pathId(req.path.user_id!);
    await req.call(realmRef(req.realmId), "statusTarget", { userId });
    return { status: await req.call(userRef(req.realmId, userId), "userStatus", {}) };
  },
});

const listAlertWords = defineRoute({
  method: "GET",
  path: "/users/me/alert_words",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "alertWords", {});
  },
});

const wordList = (max?: number) =>
  p.json(
    c.list((v, name) => {
      if (typeof v !== "string") throw errors.notString(name);
      if (max !== undefined && v.length > max && [...v].length > max) throw errors.tooLong(name, max);
      return v;
    }),
  );

const addAlertWords = defineRoute({
  method: "POST",
  path: "/users/me/alert_words",
  auth: "required",
  params: { alert_words: param(wordList(ALERT_WORD_MAX), { required: true }) },
  async handler(req) {
    // Zulip's clean_alert_words: stripped, empty ones dropped.
    const words = req.params.alert_words.map((w) => w.trim()).filter((w) => w !== "");
    return await req.call(own(req), "addAlertWords", { words });
  },
});

const removeAlertWords = defineRoute({
  method: "DELETE",
  path: "/users/me/alert_words",
  auth: "required",
  params: { alert_words: param(wordList(), { required: true }) },
  async handler(req) {
    return await req.call(own(req), "removeAlertWords", { words: req.params.alert_words });
  },
});

const muteUser = defineRoute({
  method: "POST",
  path: "/users/me/muted_users/:muted_user_id",
  auth: "required",
  params: {},
  async handler(req) {
    const mutedId = pathId(req.path.muted_user_id!);
    // The caller's unread received rows: those the muted user sent become read too.
    const { rows } = await unreadRows(req, req.caller!.userId, null);
    return await req.call(own(req), "muteUser", { mutedId, received: rows });
  },
});

const unmuteUser = defineRoute({
  method: "DELETE",
  path: "/users/me/muted_users/:muted_user_id",
  auth: "required",
  params: {},
  async handler(req) {
    const mutedId = pathId(req.path.muted_user_id!);
    return await req.call(own(req), "unmuteUser", { mutedId });
  },
});

export const userPrefRoutes: RouteDef[] = [
  getStatus,
  listAlertWords,
  addAlertWords,
  removeAlertWords,
  muteUser,
  unmuteUser,
];
