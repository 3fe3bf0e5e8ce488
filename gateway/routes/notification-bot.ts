// What routes need of the Notification Bot's messages (links, mentions),
// and PATCH /realm's channel-valued settings. The bot's posts that follow a
// change are its deciding turn's hand-off: a move's breadcrumbs
// (actors/channel/breadcrumbs.ts), the announcement of new channels and the
// new-subscription notices (actors/channel-directory/bot-posts.ts).

import { channelDirectoryRef, realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { ANNOUNCEMENT_STREAM_SETTINGS } from "../../actors/realm/index.ts";
import type { Obj } from "../../actors/types.ts";
import { hashEncode, silentMention, type LinkOrigin } from "../../actors/channel/index.ts";
import { p, param, type ParamSpec, type RouteRequest } from "../index.ts";

export { hashEncode, silentMention };

/** Where links in the Notification Bot's posts point: the realm's host when it has one, else this one. */
export function linkOrigin(req: RouteRequest): LinkOrigin {
  return { scheme: req.scheme, host: process.env.EXTERNAL_HOST || req.host };
}

/** Zulip's near_stream_message_url (under the realm's URL, as /register's realm_url). */
export async function nearMessageUrl(
  req: RouteRequest,
  streamId: number,
  name: string,
  topic: string,
  id: number,
): Promise<string> {
  const info = await req.call(realmRef(req.realmId), "publicInfo", {});
  const base = `${req.scheme}://${info.host || process.env.EXTERNAL_HOST || req.host}`;
  const channel = `${streamId}-${hashEncode(name.replace(/ /g, "-"))}`;
  return `${base}/#narrow/channel/${channel}/topic/${hashEncode(topic)}/near/${id}`;
}

// ---- PATCH /realm: the channel-valued settings --------------------------------------------

/** PATCH /realm parameters (Json[int] in Zulip). */
export const announcementSettingParams: Record<string, ParamSpec> = Object.fromEntries(
  ANNOUNCEMENT_STREAM_SETTINGS.map((n) => [n, param(p.int())]),
);

const ROLE_ADMINISTRATOR = 200;

/**
 * Check the channel-valued settings PATCH /realm sent (administrators only;
 * an id >= 0 must name a live channel: Zulip's access_stream_by_id, "Invalid
 * channel ID") and return a function applying them, so that PATCH /realm
 * changes nothing when any part of the request is invalid.
 */
export async function checkAnnouncementSettings(req: RouteRequest): Promise<() => Promise<Obj>> {
  const updates: Obj = {};
  for (const n of ANNOUNCEMENT_STREAM_SETTINGS) {
    const v = req.params[n];
    if (v !== undefined) updates[n] = v as number;
  }
  if (!Object.keys(updates).length) return async () => ({});
  if (!req.caller || req.caller.role > ROLE_ADMINISTRATOR) throw errors.mustBeAdmin();
  for (const v of Object.values(updates) as number[]) {
    if (v < 0) continue;
    const info = await req
      .call(channelDirectoryRef(req.realmId), "sendContext", { stream_id: v })
      .catch(() => null);
    if (!info || info.is_archived) throw errors.invalidChannelId();
  }
  return async () => await req.call(realmRef(req.realmId), "updateAnnouncementStreams", { updates });
}
