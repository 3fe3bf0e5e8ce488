// The automated messages Zulip's Notification Bot posts on behalf of a
// request (zerver/views/streams.py send_messages_for_new_subscribers), and
// PATCH /realm's channel-valued settings; a move's breadcrumbs are posted
// by its hand-off (actors/channel/breadcrumbs.ts). Route modules call these
// after their own actor call succeeded; the message goes through the target
// conversation's ordinary `send` with `notification_bot: true`
// (actors/realm/system-bot.ts).

import { channelConvRef, channelDirectoryRef, dmConvRef, realmRef } from "../../actors/index.ts";
import { NOTIFICATION_BOT_ID } from "../../actors/realm/index.ts";
import { errors } from "../../actors/errors.ts";
import { ANNOUNCEMENT_STREAM_SETTINGS } from "../../actors/realm/index.ts";
import type { Obj } from "../../actors/types.ts";
import { hashEncode, silentMention, type LinkOrigin } from "../../actors/channel/index.ts";
import { p, param, type ParamSpec, type RouteRequest } from "../index.ts";

/** Zulip's Realm.*_TOPIC names of the automated messages used here. */
export const NEW_CHANNELS_TOPIC = "new channels";

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

async function actingName(req: RouteRequest): Promise<string> {
  const r = await req.call(realmRef(req.realmId), "getMember", { userId: req.caller!.userId });
  return String(r.user.full_name);
}

/** Post `content` to a channel topic as the Notification Bot; `readByActor` marks it read for the caller. */
async function botSend(
  req: RouteRequest,
  streamId: number,
  topic: string,
  content: string,
  readByActor: boolean,
): Promise<void> {
  await req.call(channelConvRef(req.realmId, streamId), "send", {
    content,
    topic,
    client: "Internal",
    notification_bot: true,
    read_by_sender: readByActor,
  });
}

/**
 * `announce` on channel creation: one message in the realm's
 * new-channel announcements channel (topic "new channels"), unless that
 * setting is disabled or its channel is gone. Like Zulip's server, every
 * channel the request created is listed, private ones included (Zulip's
 * clients offer `announce` only for public channels). Marked read for the
 * creator (Zulip's mark_as_read=[acting user]).
 */
export async function announceNewChannels(
  req: RouteRequest,
  created: { id: number; name: string }[],
): Promise<void> {
  if (!created.length) return;
  const ctx = await req.call(realmRef(req.realmId), "notificationContext", {});
  const target = ctx.newStreamAnnouncementsStreamId;
  if (typeof target !== "number" || target < 0) return;
  const info = await req
    .call(channelDirectoryRef(req.realmId), "sendContext", { stream_id: target })
    .catch(() => null);
  if (!info || info.is_archived) return;
  const user = silentMention(await actingName(req), req.caller!.userId);
  const links = created.map((ch) => `#**${ch.name}**`).join(", ");
  const content =
    created.length > 1
      ? `${user} created the following channels: ${links}.`
      : `${user} created a new channel ${links}.`;
  await botSend(req, target, NEW_CHANNELS_TOPIC, content, true);
}

/** Zulip's settings.MAX_BULK_NEW_SUBSCRIPTION_MESSAGES (POST /register max_bulk_new_subscription_messages). */
export const MAX_BULK_NEW_SUBSCRIPTION_MESSAGES = 100;

/**
 * Notification Bot's DM to each user someone else subscribed to existing
 * channels (the directory's `notices`: no bots, not the actor, not channels
 * the request created), unless more than MAX_BULK_NEW_SUBSCRIPTION_MESSAGES
 * users were subscribed (FL 397). The text is built and checked by the DM
 * conversation (actors/channel/subscription-notices.ts). Returns
 * new_subscription_messages_sent.
 */
export async function notifyNewSubscribers(
  req: RouteRequest,
  subscribedUsers: number,
  notices: { user_id: number; stream_ids: number[] }[],
): Promise<boolean> {
  if (subscribedUsers > MAX_BULK_NEW_SUBSCRIPTION_MESSAGES) return false;
  // The subscriptions are done: a notice that cannot be sent (the user was
  // unsubscribed or deactivated meanwhile) does not turn them into an error.
  let sent = true;
  for (const n of notices) {
    await req
      .call(dmConvRef(req.realmId, [n.user_id, NOTIFICATION_BOT_ID]), "subscriptionNotice", {
        stream_ids: n.stream_ids,
      })
      .catch(() => {
        sent = false;
      });
  }
  return sent;
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
