// Message reads beside the fetch (Zulip's zerver/views/message_edit.py
// get_message_edit_history, read_receipts.py, message_send.py
// render_message_backend, message_fetch.py messages_in_narrow_backend).
// The message is found as every single-message route finds it (messages.ts
// `locate`), then its conversation actor answers and checks access itself.

import { channelDirectoryRef, realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Obj } from "../../actors/types.ts";
import { c, defineRoute, p, param, type RouteDef } from "../index.ts";
import { byConv, convRef, indexCandidates, locate, narrowChecker, planNarrow } from "../narrow.ts";
import { pathInt } from "./messages.ts";

/** settings.MAX_MESSAGE_LENGTH: the longest content POST /messages/render takes. */
const MAX_RENDER_LENGTH = 10000;

const messageHistory = defineRoute({
  method: "GET",
  path: "/messages/:message_id/history",
  auth: "required",
  params: { allow_empty_topic_name: param(p.bool(), { default: false }) },
  async handler(req) {
    const id = pathInt(req, "message_id");
    // Zulip refuses before looking the message up: a disabled history says so for any id.
    const { settings } = await req.call(realmRef(req.realmId), "registerRealmState", {});
    if (settings.message_edit_history_visibility_policy === "none") throw errors.editHistoryDisabled();
    const item = await locate(req, id);
    return await req.call(convRef(req, item.conv), "messageEditHistory", {
      message_id: id,
      allow_empty_topic_name: req.params.allow_empty_topic_name,
    });
  },
});

const renderMessage = defineRoute({
  method: "POST",
  path: "/messages/render",
  auth: "required",
  params: { content: param(p.string({ maxLength: MAX_RENDER_LENGTH }), { required: true }) },
  async handler(req) {
    return await req.call(channelDirectoryRef(req.realmId), "renderPreview", {
      content: req.params.content,
    });
  },
});

const readReceipts = defineRoute({
  method: "GET",
  path: "/messages/:message_id/read_receipts",
  auth: "required",
  params: {},
  async handler(req) {
    const id = pathInt(req, "message_id");
    const item = await locate(req, id);
    return await req.call(convRef(req, item.conv), "readReceipts", { message_id: id });
  },
});

/**
 * Zulip checks only messages the caller received (their UserMessage rows):
 * the caller's flag index, filtered by the narrow plan of GET /messages;
 * the content terms (has, search) and the match fields come from the
 * conversations, one call each.
 */
const matchesNarrow = defineRoute({
  method: "GET",
  path: "/messages/matches_narrow",
  auth: "required",
  params: {
    msg_ids: param(p.json(c.list(c.int())), { required: true }),
    narrow: param(p.json(narrowChecker), { required: true }),
  },
  async handler(req) {
    const ids = [...new Set(req.params.msg_ids)];
    const plan = await planNarrow(req, req.params.narrow);
    const items = ids.length ? await indexCandidates(req, plan, ids) : [];
    const f = plan.filters;
    const filters = {
      has: f.has,
      mentions: f.mentions,
      ...(f.search !== undefined ? { search: f.search } : {}),
    };
    const messages: Obj = {};
    const parts = await Promise.all(
      [...byConv(items)].map(([conv, convIds]) =>
        req.call(convRef(req, conv), "matchNarrow", { ids: convIds, filters }),
      ),
    );
    for (const part of parts) Object.assign(messages, part.messages);
    return { messages };
  },
});

export const messageExtraRoutes: RouteDef[] = [messageHistory, renderMessage, readReceipts, matchesNarrow];
