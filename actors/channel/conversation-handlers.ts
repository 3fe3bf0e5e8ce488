// Handlers of a conversation actor: send, fetch, reactions, edits and
// deletion of the messages of one channel (key = channel id) or one
// direct-message conversation (key "dm:<ids>").
//
// Calls go one way: a conversation calls the channel directory
// (`sendContext`, `readContext`, `allNames`: leaves), the realm (`roster`, `apiEmails`: leaves), the
// permissions module, and user actors (flag methods: leaves). Nothing
// calls a conversation from inside a turn.

import { groupMentionsOf, pushHandoffs } from "./push-candidates.ts";
import { firstMessageAdded, firstMessageRemoved, firstMessageSent } from "./first-message.ts";
import { channelSendDay } from "./recently-active.ts";
import { createHash, randomBytes } from "node:crypto";
import { errors } from "../errors.ts";
import { isUserInGroupSetting, realmGroupSetting } from "../permissions/index.ts";
import { NOTIFICATION_BOT_ENTRY, WELCOME_BOT_ENTRY, WELCOME_BOT_ID } from "../realm/index.ts";
import type { ActorContext, Caller, Obj, RecordWrite, Value } from "../types.ts";
import { JsonText, type ArgsOf } from "../protocol.ts";
import { messageJsonHead, type JsonVariant } from "./message-json.ts";
import type { ChannelProtocol, ConvHandler, ConvHandlers, FetchReply, Filters, Row } from "./protocol.ts";
import { checkEmoji, resolveEmojiName } from "../emoji/index.ts";
import { gravatarUrl, jdenticonPath, userRef, type Delivery } from "../user/index.ts";
import { channelDirectoryRef, dmKey, isDmKey, realmRef } from "../addresses.ts";
import {
  checkGroupMentions,
  historyProtected,
  mentionGroupsFor,
  roster,
  topicLatestFor,
  type ChannelInfo,
  type ReadContext,
  type Roster,
} from "../channel-directory/index.ts";
import { localLatest } from "./markdown-links.ts";
import { lowerBound } from "../sorted-ids.ts";
import {
  addWrites,
  allIds,
  changeOf,
  getMsgs,
  idsRange,
  newestId,
  presentIds,
  removedFacts,
  removeWrites,
  type ConvFact,
  type ConvState,
  type Msg,
  type PendingMove,
  type Reader,
} from "./conversation-state.ts";
import { emptyEnv, needsChannels, renderMarkdown, topicLinks, type RenderEnv } from "../markdown/index.ts";
import { LARGER_THAN_MAX_MESSAGE_ID, highlight, matchesSearch, walkWindowBy } from "./window.ts";
import { outgoingWebhookHandoffs } from "../webhook/index.ts";
import { deliveryHandoff, type SendAutoTopic } from "./delivery.ts";
import { sendContext } from "./channel-info.ts";
import { breadcrumbsHandoff, silentMention } from "./breadcrumbs.ts";
import { moveHandoff, type MoveOrder } from "./move.ts";
import { participationHandoff } from "./participation.ts";
import { checkDirectMessagePolicy } from "./dm-permissions.ts";
import { accessibleIds, channelSpans, receivedFlagSource, receivedIds, type FlagSource } from "./received.ts";
import { inSpans } from "../spans.ts";
import { alertedUsers, cachedStamp, realmMatcher } from "./alert-words.ts";
import { linkedPathIds, uploadsDirectoryRef } from "../uploads/index.ts";
import {
  checkChangeAllLimit,
  checkChannelMoveLimit,
  checkContentEdit,
  checkDeleteLimit,
  checkTopicChange,
  isResolveToggle,
  messageLimits,
} from "./edit-rules.ts";

export const MAX_MESSAGE_LENGTH = 10000;
export const MAX_TOPIC_LENGTH = 60;
/** Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME. */
export const EMPTY_TOPIC_NAME = "general chat";
const EVERYONE_GROUP = 7;

function fact(f: ConvFact): Obj {
  return f as unknown as Obj;
}

/** `userId`: the user whose content access through groups the directory checks (see canRead). */
export async function channelInfo(
  ctx: ActorContext,
  state: ConvState,
  forSend = false,
  userId?: number,
): Promise<ChannelInfo> {
  return await sendContext(ctx, state.realmId, Number(state.key), {
    forSend,
    ...(userId === undefined ? {} : { userId }),
  });
}

/**
 * A history read's view of its channel and of `userId` (access settings,
 * subscription, spans): one call to a reader of the directory, which never
 * waits behind the directory's writes and carries no subscriber lists.
 */
export async function readContext(ctx: ActorContext, state: ConvState, userId: number): Promise<ReadContext> {
  return await ctx.call(channelDirectoryRef(state.realmId), "readContext", {
    stream_id: Number(state.key),
    userId,
  });
}

/** Who of the realm has an alert word in `content`; empty when nobody has alert words. */
async function alerted(ctx: ActorContext, realmId: number, sender: number, users: Roster, content: string) {
  const p = users.prefs ?? {};
  let matcher = realmMatcher(realmId, p.alertStamp, p.alertWords);
  if (matcher === undefined) {
    const again = (await roster(ctx, realmId, { sender })).prefs ?? {};
    matcher = realmMatcher(realmId, again.alertStamp, again.alertWords);
  }
  return matcher ? alertedUsers(matcher, content) : new Set<number>();
}

export function me(caller: Caller | null): Caller {
  if (!caller) throw errors.accessDenied();
  return caller;
}

const isAdmin = (role: number) => role <= 200;
/** Binary search in the directory's ascending subscriber list (no pass over a large channel). */
const isSubscriber = (ch: ChannelInfo, id: number) => ch.subscribers[lowerBound(ch.subscribers, id)] === id;
const isGuest = (role: number) => role >= 600;

/**
 * Content access to a channel's messages (not counting history protection).
 * A ReadContext is about the caller (`readContext` asked for them).
 */
export function canRead(ch: ChannelInfo | ReadContext, c: Caller): boolean {
  const subscribed = "subscribed" in ch ? ch.subscribed : isSubscriber(ch, c.userId);
  if (subscribed || ch.is_web_public) return true;
  if (!ch.invite_only) return !isGuest(c.role);
  // Content access through can_add_subscribers_group / can_subscribe_group,
  // checked by the directory when channelInfo named this user (FL 354).
  return ch.content_access_user === c.userId;
}

// ---- content normalisation (Zulip's normalize_body / truncate_topic) --------

/** The UTF-16 offset after `n` code points of `s`, or -1 when `s` has at most `n`. */
function offsetAfterCodePoints(s: string, n: number): number {
  let i = 0;
  for (let count = 0; i < s.length; count++) {
    if (count === n) return i;
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
  }
  return -1;
}

/** Zulip's truncate_content, counting code points; walks at most `max` of them. */
function truncate(s: string, max: number, suffix: string): string {
  if (offsetAfterCodePoints(s, max) < 0) return s;
  return s.slice(0, offsetAfterCodePoints(s, max - [...suffix].length)) + suffix;
}

/**
 * Zulip's normalize_body: rstrip, drop leading newlines, refuse empty,
 * truncate. Native trimEnd and index loops only: a backtracking `\s+$`
 * here took quadratic time on a long run of spaces.
 */
export function normalizeContent(raw: string): string {
  let start = 0;
  const body0 = raw.trimEnd();
  while (start < body0.length && body0.charCodeAt(start) === 0x0a) start++;
  const body = start ? body0.slice(start) : body0;
  if (body === "") throw errors.messageEmpty();
  return truncate(body, MAX_MESSAGE_LENGTH, "\n[message truncated]");
}

/** Strip, read the display name of the empty topic as "", check characters, truncate. */
export function normalizeTopic(raw: string): string {
  let topic = raw.trim();
  if (topic === EMPTY_TOPIC_NAME || topic === "(no topic)") topic = "";
  let pos = 0;
  for (const ch of topic) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp === 0xfffe || cp === 0xffff)
      throw errors.topicBadChar(pos);
    pos++;
  }
  return truncate(topic, MAX_TOPIC_LENGTH, "...");
}

/** A channel's topics_policy; "inherit" takes the realm's (`realmPolicy`, FL 392). */
function checkTopicPolicy(channelPolicy: string, topic: string, realmPolicy: string): void {
  const policy = channelPolicy === "inherit" ? realmPolicy : channelPolicy;
  if (topic === "" && policy === "disable_empty_topic") throw errors.emptyTopicDisallowed();
  if (topic !== "" && policy === "empty_topic_only") throw errors.onlyEmptyTopic();
}

// ---- formatting ---------------------------------------------------------------

/** A stable positive number standing in for Zulip's Recipient id of a conversation. */
function recipientId(key: string): number {
  if (!isDmKey(key)) return Number(key);
  let h = 2166136261;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619) >>> 0;
  return 1_000_000_000 + (h % 1_000_000_000);
}

const avatarUrls = new Map<string, string>();

/** gravatarUrl (an MD5 per call), remembered: a fetch formats many messages of few senders. */
function avatarUrl(email: string, version: number): string {
  const key = `${version} ${email}`;
  let url = avatarUrls.get(key);
  if (url === undefined) {
    if (avatarUrls.size >= 10_000) avatarUrls.clear();
    url = gravatarUrl(email, version);
    avatarUrls.set(key, url);
  }
  return url;
}

/** User id -> current API email, full name and avatar version (the realm's apiEmails). */
export interface ApiEmails {
  emails: Record<string, string>;
  fullNames: Record<string, string>;
  avatarVersions: Record<string, number>;
}

function dmDisplayRecipient(recipients: Obj[], current: ApiEmails | undefined): Value {
  return recipients.map((r) => {
    const out = { ...r };
    const email = current?.emails[String(r.id)];
    if (email !== undefined) out.email = email;
    const name = current?.fullNames[String(r.id)];
    if (name !== undefined) out.full_name = name;
    return out;
  }) as unknown as Value;
}

/** Today's API emails, names and avatars of the senders and DM recipients of `msgs` (one leaf call to the realm). */
async function currentApiEmails(
  ctx: ActorContext,
  state: Pick<ConvState, "realmId" | "dmRecipients">,
  msgs: Msg[],
): Promise<ApiEmails | undefined> {
  const ids = new Set<number>();
  for (const m of msgs) ids.add(m.senderId);
  for (const r of state.dmRecipients ?? []) ids.add(Number(r.id));
  if (!ids.size) return undefined;
  const r: Partial<ApiEmails> = await ctx.call(realmRef(state.realmId), "apiEmails", { userIds: [...ids] });
  return { emails: r.emails ?? {}, fullNames: r.fullNames ?? {}, avatarVersions: r.avatarVersions ?? {} };
}

/**
 * The message in the shape of message events (Zulip's message object,
 * https://zulip.com/api/get-messages, and the
 * conventions in actors/queue/shape.ts): content = Markdown,
 * rendered_content = HTML, sender_avatar_source for client_gravatar.
 */
export function formatMessage(
  state: Pick<ConvState, "key" | "dmRecipients" | "realmId">,
  m: Msg,
  channelName: string | null,
  current?: ApiEmails,
): Obj {
  const dm = isDmKey(state.key);
  // Stored senders are those of the sending time; `current` has today's
  // API email, name and avatar version (Zulip shows the current ones).
  const sid = String(m.senderId);
  const senderEmail = current?.emails[sid] ?? m.senderEmail;
  const avatarVersion = current?.avatarVersions[sid] ?? m.senderAvatarVersion;
  const out: Obj = {
    id: m.id,
    sender_id: m.senderId,
    sender_email: senderEmail,
    sender_full_name: current?.fullNames[sid] ?? m.senderName,
    sender_realm_str: "",
    // From the API email, never a hidden real one (its MD5 would leak it).
    // A user's avatar source never changes here (no avatar uploads yet).
    avatar_url:
      m.senderAvatarSource === "J"
        ? jdenticonPath(state.realmId, m.senderId, avatarVersion)
        : avatarUrl(senderEmail, avatarVersion),
    sender_avatar_source: m.senderAvatarSource ?? "G",
    client: m.client,
    content: m.content,
    rendered_content: m.rendered,
    display_recipient: dm ? dmDisplayRecipient(state.dmRecipients ?? [], current) : channelName,
    recipient_id: recipientId(state.key),
    type: dm ? "private" : "stream",
    subject: m.topic,
    topic_links: (m.topicLinks ?? []).map((l) => ({ ...l })),
    timestamp: m.timestamp,
    is_me_message: m.isMe,
    reactions: m.reactions.map((r) => ({ ...r })) as unknown as Value,
    submessages: [],
  };
  if (!dm) out.stream_id = Number(state.key);
  if (m.lastEditTimestamp !== null) out.last_edit_timestamp = m.lastEditTimestamp;
  if (m.lastMovedTimestamp !== null) out.last_moved_timestamp = m.lastMovedTimestamp;
  if (m.editHistory.length) out.edit_history = structuredClone(m.editHistory) as Value;
  return out;
}

/** The GET /messages form of a formatted message, for one client's options. */
export function shapeForClient(
  msg: Obj,
  o: { applyMarkdown: boolean; clientGravatar: boolean; allowEmptyTopic: boolean },
): Obj {
  // Built key by key (same order as the event's), not copied and deleted from:
  // `delete` turns an object into a slow dictionary, and a fetch shapes many.
  const out: Obj = {};
  for (const k in msg) {
    if (k === "rendered_content" || k === "sender_avatar_source") continue;
    out[k] = msg[k]!;
  }
  out.content = o.applyMarkdown ? (msg.rendered_content as string) : (msg.content as string);
  out.content_type = o.applyMarkdown ? "text/html" : "text/x-markdown";
  if (o.clientGravatar && msg.sender_avatar_source === "G") out.avatar_url = null;
  if (out.type === "stream" && out.subject === "" && !o.allowEmptyTopic) out.subject = EMPTY_TOPIC_NAME;
  return out;
}

// ---- send ------------------------------------------------------------------------

async function renderEnv(
  ctx: ActorContext,
  state: ConvState,
  content: string,
  users: Roster,
  writer: Caller,
): Promise<RenderEnv> {
  const env = emptyEnv();
  env.linkifiers = users.linkifiers ?? [];
  env.users = users.mentions;
  if (needsChannels(content)) {
    env.channels = await ctx.call(channelDirectoryRef(state.realmId), "allNames", {});
    env.topicLatest = await topicLatestFor(ctx, state.realmId, content, writer, {
      local: localLatest(ctx, state),
    });
  }
  env.groups = await mentionGroupsFor(ctx, state.realmId, content, writer.userId, true);
  const linked = linkedPathIds(content, state.realmId);
  if (linked.length) {
    const r = await ctx.call(uploadsDirectoryRef(state.realmId), "uploadImages", { pathIds: linked });
    env.images = new Map(r.images);
  }
  return env;
}

/**
 * The uploads a message links are shared with its readers from now on
 * (actors/uploads/): the sender's own, and another user's when the
 * sender received a message that links it (Zulip's claim_attachment needs
 * the sender to have access; public channel history the sender never
 * received does not count here).
 */
async function claimUploads(
  ctx: ActorContext,
  state: ConvState,
  senderId: number,
  messageId: number,
  dateSent: number,
  content: string,
): Promise<void> {
  const realmId = state.realmId;
  const pathIds = linkedPathIds(content, realmId);
  if (!pathIds.length) return;
  const dir = uploadsDirectoryRef(realmId);
  const claim = { senderId, messageId, dateSent: dateSent * 1000, conv: state.key };
  const r = await ctx.call(dir, "claimUploads", { ...claim, pathIds });
  if (!r.others.length) return;
  // Received: an entry of the sender's, or a channel message in the sender's spans (received.ts).
  const ids = [...new Set(r.others.flatMap(([, linking]) => linking.map(([id]) => id)))];
  const received = new Set(
    Object.keys(await ctx.call(userRef(realmId, senderId), "messageFlags", { ids })).map(Number),
  );
  const byChannel = new Map<string, number[]>();
  for (const [, linking] of r.others)
    for (const [id, conv] of linking)
      if (!received.has(id) && conv !== "" && !isDmKey(conv))
        (byChannel.get(conv) ?? byChannel.set(conv, []).get(conv)!).push(id);
  for (const [conv, list] of byChannel)
    for (const id of await receivedIds(ctx, realmId, conv, senderId, list)) received.add(id);
  const seen = r.others.filter(([, linking]) => linking.some(([id]) => received.has(id)));
  if (seen.length) {
    await ctx.call(dir, "claimUploads", { ...claim, pathIds: seen.map(([p]) => p), shared: true });
  }
}

/** A promise started ahead of its use: awaited later, it rejects then; never an unhandled rejection meanwhile. */
function asked<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

export const send: ConvHandler<"send"> = async (state, args, ctx, caller) => {
  // `notification_bot` (set only by gateway code, for Zulip's automated messages): the
  // realm's Notification Bot sends; like Zulip's cross-realm bots it may post to any live
  // channel and is no recipient; `read_by_sender` then marks it read for the acting user.
  const actor = me(caller);
  // Scheduled messages (actors/user/scheduled-messages.ts): `send_key` makes a
  // retried delivery answer the message it already sent; `check_only` runs
  // every check of a send and answers the rendering without sending.
  // Internal callers only: the gateway never passes them on.
  const internal = ctx.origin !== "external";
  const sendKey = internal && args.send_key !== undefined ? args.send_key : null;
  if (sendKey !== null) {
    const sent = state.sendKeys.find(([k]) => k === sendKey);
    if (sent) return { reply: { id: sent[1] } };
  }
  // The bot writes to a user (a direct message) for internal callers only:
  // a scheduled message's failure notice (actors/user/scheduled-delivery.ts).
  // `welcome_bot` (Welcome Bot, direct messages only): the new-user greeting
  // (internal, cluster/invite-worker.ts), and POST /realm/test_welcome_bot_custom_message,
  // where the gateway may have it write only to an acting administrator (checked below).
  const welcome = args.welcome_bot === true && isDmKey(state.key);
  const welcomeTest =
    welcome &&
    !internal &&
    state.key === dmKey([actor.userId, WELCOME_BOT_ID]) &&
    actor.userId !== WELCOME_BOT_ID;
  const bot = welcome
    ? internal || welcomeTest
    : args.notification_bot === true && (!isDmKey(state.key) || internal);
  const botEntry = welcome ? WELCOME_BOT_ENTRY : NOTIFICATION_BOT_ENTRY;
  const c: Caller = bot ? { ...actor, userId: botEntry.userId, role: 400, isBot: true } : actor;
  const content = normalizeContent(args.content);
  const dm = isDmKey(state.key);
  // The roster, the channel's send context and the message's id do not
  // depend on each other: asked at once (in cluster mode each is a round
  // trip: the realm, the directory, the store's counter), awaited in the
  // order of the checks that use them, so the first failing check still
  // decides the error. A refused send leaves a gap in the ids, as Zulip's
  // sequence does.
  const usersP = roster(ctx, state.realmId, {
    sender: c.userId,
    ...(cachedStamp(state.realmId) === undefined ? {} : { alertStamp: cachedStamp(state.realmId)! }),
  });
  const channelP = dm ? null : asked(channelInfo(ctx, state, true, c.userId));
  const idP = internal && args.check_only === true ? null : asked(ctx.nextId(`message.${state.realmId}`));
  const users = await usersP;
  const sender = bot ? botEntry : users.get(c.userId);
  if (!sender || !sender.isActive) throw errors.accessDenied();
  if (bot && !internal && welcome) {
    const acting = users.get(actor.userId);
    if (!acting || !acting.isActive || acting.role > 200) throw errors.accessDenied();
  }
  // A DM's recipients; a channel's are its active subscribers (and the
  // sender), listed only when every one has flags (a channel-wide wildcard).
  let recipients: () => number[];
  let isRecipient: (id: number) => boolean;
  let channelId: number | null = null;
  // Queues that see every public channel's messages (not recipients: no flags, no UserMessage).
  let watchers: number[] = [];
  let topic = "";
  let channelName: string | null = null;
  let dmRecipients: Obj[] | undefined;
  let senderMutedChannel = false;
  let channelMutedBy: number[] = [];
  let channelPushOn: number[] = [];
  let sendChannel: ChannelInfo | null = null;
  // Counted only for a channel-wide wildcard mention (a pass over the subscribers).
  let activeSubscriberCount = () => 0;
  if (dm) {
    const ids = state.key.slice(3).split(",").map(Number);
    if (!ids.includes(c.userId)) throw errors.accessDenied();
    // The bot has no user actor: it is a participant, never a recipient.
    const people = bot ? ids.filter((id) => id !== botEntry.userId) : ids;
    for (const id of people) {
      const u = users.get(id);
      if (!u) throw errors.invalidUserId(id);
      if (!u.isActive && id !== c.userId) throw errors.userDeactivated();
    }
    if (!bot) await checkDirectMessagePolicy(ctx, state.realmId, c, people, users, state.count === 0);
    recipients = () => people;
    isRecipient = (id) => people.includes(id);
    dmRecipients = ids.map((id) => {
      const u = bot && id === botEntry.userId ? botEntry : users.get(id)!;
      return { id, email: u.email, full_name: u.fullName, is_mirror_dummy: false };
    });
  } else {
    const ch = await channelP!;
    sendChannel = ch;
    channelName = ch.name;
    if (ch.is_archived || (!bot && !canRead(ch, c))) {
      throw errors.notAuthorizedToSend(ch.name);
    }
    const canSend = ch.groups.can_send_message_group!;
    if (
      !bot &&
      canSend !== EVERYONE_GROUP &&
      !(await isUserInGroupSetting(ctx, state.realmId, canSend, c.userId))
    ) {
      throw errors.noPostPermission();
    }
    if (args.topic === undefined) throw errors.missingTopic();
    topic = normalizeTopic(args.topic);
    checkTopicPolicy(ch.topics_policy, topic, users.topicsPolicy);
    senderMutedChannel = ch.muted_by?.includes(c.userId) ?? false;
    channelMutedBy = ch.muted_by ?? [];
    channelPushOn = ch.push_on ?? [];
    channelId = ch.stream_id;
    // Ascending (the directory's list): a send costs no pass over it unless a
    // channel-wide wildcard flags everyone.
    const subs = ch.subscribers;
    const subscribed = (id: number) => subs[lowerBound(subs, id)] === id;
    activeSubscriberCount = () => subs.filter((id) => users.get(id)?.isActive).length;
    recipients = () => [
      ...new Set([...subs.filter((id) => users.get(id)?.isActive), ...(bot ? [] : [c.userId])]),
    ];
    isRecipient = (id) => (!bot && id === c.userId) || (subscribed(id) && users.get(id)?.isActive === true);
    // Zulip's realm_clients_all_streams: every channel that is not invite-only.
    if (!ch.invite_only && users.prefs?.allPublic) {
      watchers = users.prefs.allPublic.filter((id) => {
        const u = users.get(id);
        return u !== undefined && u.isActive && !isGuest(u.role) && !isRecipient(id);
      });
    }
  }

  const env = await renderEnv(ctx, state, content, users, c);
  const rendered = renderMarkdown(content, env);
  checkGroupMentions(env);
  if (idP === null) return { reply: { content, rendered, topic } };
  const id = await idP;
  const now = Math.floor(ctx.now() / 1000);
  const msg: Msg = {
    id,
    senderId: c.userId,
    senderEmail: sender.email,
    senderName: sender.fullName,
    senderAvatarVersion: sender.avatarVersion,
    ...("avatarSource" in sender && sender.avatarSource === "J" ? { senderAvatarSource: "J" as const } : {}),
    client: args.client ?? "API",
    content,
    rendered,
    topic,
    topicLinks: topicLinks(topic, users.linkifiers ?? []),
    timestamp: now,
    reactions: [],
    lastEditTimestamp: null,
    lastMovedTimestamp: null,
    editHistory: [],
    mentioned: [...env.mentionedUserIds],
    isMe: /^\/me( |$)/.test(content),
  };
  // Topic wildcard mentions reach those who took part in the topic (the topic index).
  const topicParticipants = state.topics.get(topic.toLowerCase())?.senders ?? new Map<number, number>();
  if (!dm && !bot && env.wildcard) {
    await checkWildcardMention(
      ctx,
      state.realmId,
      c.userId,
      env.wildcard,
      env.wildcard === "channel" ? activeSubscriberCount() : topicParticipants.size,
    );
  }
  // Automatic topic visibility (actors/user/auto-topics.ts), set by the
  // delivery: whether this send starts the topic, the sender's mute of the
  // channel, and the active humans it personally mentions.
  const autoTopic: SendAutoTopic = {
    initiated: !(state.topics.get(topic.toLowerCase())?.count ?? 0),
    channel_muted: senderMutedChannel,
    mentioned: [...env.mentionedUserIds].filter((uid) => isRecipient(uid) && users.get(uid)?.isBot === false),
  };
  const readBySender = args.read_by_sender !== false;
  // Those who muted the sender get the message already read (Zulip's
  // mark_as_read_user_ids): no unread count, mention or notification.
  const mutedBy = users.prefs?.mutedBy ? new Set(users.prefs.mutedBy) : undefined;
  const alerts = await alerted(ctx, state.realmId, c.userId, users, content);
  // A recipient's flags; for a channel only the recipients with some (and
  // the sender) are listed: the others' rows are received rows, with none.
  const perUser = new Map<number, string[]>();
  const everyone = dm || env.wildcard === "channel";
  // Otherwise only these can have flags: no pass over the channel's subscribers.
  const candidates = everyone
    ? recipients()
    : [
        ...new Set([
          c.userId,
          actor.userId,
          ...(mutedBy ?? []),
          ...env.mentionedUserIds,
          ...(env.wildcard === "topic" ? topicParticipants.keys() : []),
          ...alerts,
        ]),
      ].filter(isRecipient);
  for (const uid of candidates) {
    if (
      !everyone &&
      uid !== c.userId &&
      uid !== actor.userId &&
      !mutedBy?.has(uid) &&
      !env.mentionedUserIds.has(uid) &&
      !(env.wildcard === "topic" && topicParticipants.has(uid)) &&
      !alerts.has(uid)
    )
      continue;
    const flags: string[] = [];
    if ((uid === actor.userId && readBySender) || mutedBy?.has(uid)) flags.push("read");
    if (env.mentionedUserIds.has(uid)) flags.push("mentioned");
    // Zulip flags a channel-wide wildcard (@all, @everyone) the same way in DMs.
    if (env.wildcard === "channel") flags.push("stream_wildcard_mentioned");
    if (env.wildcard === "topic" && (topicParticipants.has(uid) || uid === c.userId))
      flags.push("topic_wildcard_mentioned");
    if (alerts.has(uid)) flags.push("has_alert_word");
    perUser.set(uid, flags);
  }
  const f = fact({
    type: "msgAdded",
    msg,
    stored: true,
    ...(dmRecipients ? { dmRecipients } : {}),
    ...(sendKey !== null ? { sendKey } : {}),
  });
  // Only recipients with flags are listed (the queue gives the others []);
  // `watchers` names the queues that get it without being recipients.
  const userFlags: Obj = {};
  for (const [uid, flags] of perUser) if (flags.length) userFlags[String(uid)] = flags;
  // The event formats the one new message, as the state will hold it once applied.
  const view = { key: state.key, realmId: state.realmId, dmRecipients: dmRecipients ?? state.dmRecipients };
  const event: Obj = {
    type: "message",
    message: formatMessage(view, msg, channelName),
    user_flags: userFlags,
    watchers,
  };
  if (args.queue_id !== undefined && args.local_id !== undefined) {
    event.sender_queue_id = args.queue_id;
    event.local_id = args.local_id;
  }
  // A channel's ordinary recipients get nothing stored: they received the
  // message through their subscription spans (received.ts). Only the
  // sender's row and rows with flags (mentions, alert words, muted sender)
  // are delivered; a DM's are all delivered.
  const delivered = dm
    ? perUser
    : new Map([...perUser].filter(([uid, flags]) => flags.length > 0 || uid === c.userId));
  // Outgoing webhooks (actors/webhook): a durable hand-off, journaled with the message (outbox).
  await claimUploads(ctx, state, c.userId, id, now, content);
  await firstMessageSent(ctx, state, id);
  if (sendChannel) await channelSendDay(ctx, state.realmId, sendChannel, now);
  const handoffs = [
    deliveryHandoff(
      state.realmId,
      [id, state.key, topic, c.userId],
      delivered,
      dm || bot ? undefined : autoTopic,
    ),
    ...outgoingWebhookHandoffs(state.realmId, event.message as Obj, users, env.mentionedUserIds),
    ...pushHandoffs({
      realmId: state.realmId,
      message: event.message as Obj,
      senderId: c.userId,
      dm,
      channelId,
      isRecipient,
      recipients,
      mentioned: env.mentionedUserIds,
      wildcard: env.wildcard,
      topicParticipants: topicParticipants.keys(),
      mutedBy,
      channelMutedBy,
      channelPushOn,
      groupOf: groupMentionsOf(env, rendered),
      users,
    }),
  ];
  return {
    facts: [f],
    writes: addWrites(state, [msg]),
    // A channel's event names its subscribers by the channel: the queue
    // shards know which of theirs have a queue (cluster/event-router.ts).
    events: [
      channelId === null
        ? { event, userIds: recipients() }
        : { event, userIds: bot ? watchers : [c.userId, ...watchers], channel: channelId },
    ],
    handoffs,
    replyAfterHandoffs: true,
    reply: dm || bot ? { id } : { id, auto_topic: true },
  };
};

// ---- fetch -------------------------------------------------------------------------

function flagFilter(flags: readonly string[], is: Filters["is"]): boolean {
  for (const t of is ?? []) {
    const has = t.flag === "unread" ? !flags.includes("read") : flags.includes(t.flag);
    if (has === t.negated) return false;
  }
  return true;
}

const UPLOAD_PATH = /[/-]user[-_]uploads[/.-]/;
const UPLOAD_IMAGE = /[/-]user[-_]uploads[/.-]\S+\.(bmp|gif|jpe?g|png|webp|tiff?)/i;

/** Zulip's has_link / has_image / has_attachment / reactions, decided from the message. */
export function messageHas(m: Msg, operand: string): boolean {
  switch (operand) {
    case "link":
      return /<a [^>]*href=/.test(m.rendered) || UPLOAD_PATH.test(m.content);
    case "image":
      return UPLOAD_IMAGE.test(m.content) || m.rendered.includes('class="message_inline_image"');
    case "attachment":
      return UPLOAD_PATH.test(m.content);
    case "reaction":
      return m.reactions.length > 0;
    default:
      return false;
  }
}

// One Set per received filter, so a long message_ids list costs linear time.
const idSets = new WeakMap<Filters, Set<number>>();

function inIdSet(f: Filters, id: number): boolean {
  let set = idSets.get(f);
  if (!set) idSets.set(f, (set = new Set(f.idIn)));
  return set.has(id);
}

export function contentFilter(m: Msg, f: Filters): boolean {
  if (f.idIn && !inIdSet(f, m.id)) return false;
  for (const t of f.topics ?? [])
    if ((m.topic.toLowerCase() === t.value.toLowerCase()) === t.negated) return false;
  for (const t of f.senders ?? []) if ((m.senderId === t.value) === t.negated) return false;
  for (const t of f.ids ?? []) if ((m.id === t.value) === t.negated) return false;
  for (const t of f.has ?? []) if (messageHas(m, t.operand) === t.negated) return false;
  for (const t of f.mentions ?? []) if (m.mentioned.includes(t.value) === t.negated) return false;
  if (f.home && f.home.mutedTopics.includes(m.topic.toLowerCase()) !== f.home.negated) return false;
  if (f.search !== undefined && !matchesSearch(f.search, m.content, m.topic)) return false;
  return true;
}

function decorate(out: Obj, m: Msg, search: string | undefined, allowEmptyTopic: boolean): void {
  if (search === undefined) return;
  out.match_content = highlight(m.rendered, search);
  const topic = m.topic === "" && !allowEmptyTopic ? EMPTY_TOPIC_NAME : m.topic;
  out.match_subject = highlight(
    topic.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`),
    search,
  );
}

interface ClientOpts {
  applyMarkdown: boolean;
  clientGravatar: boolean;
  allowEmptyTopic: boolean;
}

function clientOpts(args: ArgsOf<ChannelProtocol, "fetch" | "getByIds">): ClientOpts {
  return {
    applyMarkdown: args.apply_markdown !== false,
    clientGravatar: args.client_gravatar !== false,
    allowEmptyTopic: args.allow_empty_topic_name === true,
  };
}

export interface ChannelWindowArgs {
  anchor: number | "first_unread";
  numBefore: number;
  numAfter: number;
  includeAnchor: boolean;
  filters: Filters;
  /** A private channel with protected history: messages the caller never received are hidden. */
  protectedHistory: boolean;
}

export interface ChannelWindow {
  anchor: number;
  /** Ascending, with the caller's flags. */
  items: { id: number; flags: readonly string[] }[];
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  history_limited: boolean;
}

/**
 * A channel-bound GET /messages window, as a filter of every message
 * followed by `windowIds` would choose it, but visiting only the messages
 * near the anchor: a positive topic term walks that topic's ids (the topic
 * index), the flags come from the user actor for the visited ids only.
 */
export async function channelWindow(
  reader: Reader,
  state: ConvState,
  a: ChannelWindowArgs,
  flagsOf: FlagSource,
): Promise<ChannelWindow> {
  const f = a.filters;
  let hidden = false;
  const decide = (m: Msg, own: readonly string[] | undefined): readonly string[] | null => {
    let flags = own;
    if (!flags) {
      if (a.protectedHistory) {
        hidden = true;
        return null;
      }
      if (f.noHistory) return null;
      flags = ["read", "historical"];
    }
    return contentFilter(m, f) && flagFilter(flags, f.is) ? flags : null;
  };
  const positiveTopic = (f.topics ?? []).find((t) => !t.negated);
  const topic = positiveTopic ? positiveTopic.value : null;

  let anchor: number;
  if (a.anchor === "first_unread") {
    // Only the caller's own entries can be unread: the first of them in the narrow.
    const unread = await flagsOf({ unread: true });
    const ids = Object.keys(unread)
      .map(Number)
      .sort((x, y) => x - y);
    const msgs = await getMsgs(reader, state, ids);
    const i = ids.findIndex((id, k) => msgs[k] !== null && decide(msgs[k]!, unread[String(id)]) !== null);
    anchor = i < 0 ? LARGER_THAN_MAX_MESSAGE_ID : ids[i]!;
  } else anchor = a.anchor;

  const w = await walkWindowBy(
    { anchor, numBefore: a.numBefore, numAfter: a.numAfter, includeAnchor: a.includeAnchor },
    (r) => idsRange(reader, state, topic, r),
    async (batch) => {
      const [own, msgs] = await Promise.all([flagsOf({ ids: batch }), getMsgs(reader, state, batch)]);
      return batch.map((id, k) => {
        const m = msgs[k];
        const flags = m ? decide(m, own[String(id)]) : null;
        return flags && { id, flags };
      });
    },
  );
  // history_limited: some message of the channel (any, not only the narrow's)
  // is hidden: fewer of the caller's rows are messages here than it has.
  if (a.protectedHistory && w.found_oldest && !hidden) {
    const own = await flagsOf({ all: true });
    const held = await presentIds(reader, state, Object.keys(own).map(Number));
    hidden = held.length < state.count;
  }
  return {
    anchor,
    items: w.items,
    found_anchor: w.found_anchor,
    found_oldest: w.found_oldest,
    found_newest: w.found_newest,
    history_limited: hidden && w.found_oldest,
  };
}

/** GET /messages bound to this channel: anchor, window, filters, the caller's flags. */
const fetch: ConvHandler<"fetch"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  if (isDmKey(state.key)) throw errors.internal();
  const ch = await readContext(ctx, state, c.userId);
  // Zulip answers an inaccessible channel as an unknown one, naming it as the client did.
  if (!canRead(ch, c)) throw errors.badNarrow(`unknown channel ${String(args.operand ?? ch.stream_id)}`);
  const filters = args.filters ?? {};
  const flagsOf = receivedFlagSource(ctx, state, c.userId, ch.spans);
  const win = await channelWindow(
    ctx,
    state,
    {
      anchor: args.anchor,
      numBefore: args.num_before ?? 0,
      numAfter: args.num_after ?? 0,
      includeAnchor: args.include_anchor !== false,
      filters,
      protectedHistory: historyProtected(ch),
    },
    flagsOf,
  );
  const o = clientOpts(args);
  const msgs = (await getMsgs(
    ctx,
    state,
    win.items.map(({ id }) => id),
  )) as Msg[];
  const emails = await currentApiEmails(ctx, state, msgs);
  const search = filters.search;
  const opts = (o.applyMarkdown ? 1 : 0) | (o.clientGravatar ? 2 : 0) | (o.allowEmptyTopic ? 4 : 0);
  // The page as JSON text: each message's kept text (message-json.ts), then its flags.
  const messages = win.items.map(({ flags }, i) => {
    const m = msgs[i]!;
    const form = () => shapeForClient(formatMessage(state, m, ch.name, emails), o);
    if (search !== undefined) {
      const out = form();
      out.flags = [...flags];
      decorate(out, m, search, o.allowEmptyTopic);
      return JSON.stringify(out);
    }
    const sid = String(m.senderId);
    const variant: JsonVariant = {
      opts,
      realmId: state.realmId,
      conv: state.key,
      channelName: ch.name,
      email: emails?.emails[sid],
      fullName: emails?.fullNames[sid],
      avatarVersion: emails?.avatarVersions[sid],
    };
    const head = messageJsonHead(m, variant, form);
    return `${head},"flags":${JSON.stringify(flags)}}`;
  });
  const page = JSON.stringify({
    anchor: win.anchor,
    found_anchor: win.found_anchor,
    found_oldest: win.found_oldest,
    found_newest: win.found_newest,
    history_limited: win.history_limited,
  });
  return { replyJson: new JsonText<FetchReply>(`${page.slice(0, -1)},"messages":[${messages.join(",")}]}`) };
};

/**
 * Messages by id for the gateway's cross-conversation narrows: ids the
 * caller's own flag index listed, so access was settled by receipt. With
 * `search`, only the ids matching it are returned (as `matching`).
 */
const getByIds: ConvHandler<"getByIds"> = async (state, args, ctx, caller) => {
  me(caller);
  const found = await getMsgs(ctx, state, args.ids);
  const msgs = found.filter((m): m is Msg => m !== null);
  const search = args.search;
  if (args.matchOnly === true) {
    const f: Filters = args.filters ?? (search === undefined ? {} : { search });
    const matching = msgs.filter((m) => contentFilter(m, f)).map((m) => m.id);
    return { reply: { matching } };
  }
  const name = isDmKey(state.key) ? null : (await channelInfo(ctx, state)).name;
  const o = clientOpts(args);
  const emails = await currentApiEmails(ctx, state, msgs);
  const messages: Record<string, Obj> = {};
  for (const m of msgs) {
    const id = m.id;
    const out = shapeForClient(formatMessage(state, m, name, emails), o);
    decorate(out, m, search, o.allowEmptyTopic);
    messages[String(id)] = out;
  }
  return { reply: { messages } };
};

/**
 * Which of `ids` are messages of this channel whose history the caller may
 * read without having received them (public history): the lookup behind
 * historical UserMessage rows and `with` for unreceived messages.
 * [[id, topic, sender id]].
 */
const locateIds: ConvHandler<"locateIds"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  if (isDmKey(state.key)) return { reply: { items: [] } };
  const msgs = (await getMsgs(ctx, state, args.ids)).filter((m): m is Msg => m !== null);
  if (!msgs.length) return { reply: { items: [] } };
  let ch: ReadContext;
  try {
    ch = await readContext(ctx, state, c.userId);
  } catch {
    return { reply: { items: [] } };
  }
  if (!canRead(ch, c) || historyProtected(ch)) return { reply: { items: [] } };
  const items = msgs.map((m): Row => [m.id, m.topic, m.senderId]);
  return { reply: { items } };
};

// ---- topics ------------------------------------------------------------------------

/** GET /users/me/{stream_id}/topics: most recent first, protected history respected. */
const topics: ConvHandler<"topics"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  if (isDmKey(state.key)) throw errors.internal();
  let ch: ReadContext;
  try {
    ch = await readContext(ctx, state, c.userId);
  } catch {
    throw errors.invalidChannelId();
  }
  if (!canRead(ch, c)) throw errors.invalidChannelId();
  let visible: Set<number> | null = null;
  if (historyProtected(ch)) {
    const own = await receivedFlagSource(ctx, state, c.userId, ch.spans)({ all: true });
    visible = new Set(Object.keys(own).map(Number));
  }
  // The newest visible message of each topic; its spelling names the topic.
  // Without protected history that is the topic's newest (one range read
  // per topic the recent window does not settle); with it, a walk back
  // through the topic until a message the caller holds (O(the topic)).
  const newest = await Promise.all(
    [...state.topics.keys()].map(async (t) => {
      if (!visible) return newestId(ctx, state, t);
      const ids = await allIds(ctx, state, t);
      for (let i = ids.length - 1; i >= 0; i--) if (visible.has(ids[i]!)) return ids[i]!;
      return 0;
    }),
  );
  const maxIds = newest.filter((id) => id > 0);
  const msgs = await getMsgs(ctx, state, maxIds);
  const byTopic: { name: string; max: number }[] = [];
  maxIds.forEach((id, i) => {
    if (msgs[i]) byTopic.push({ name: msgs[i]!.topic, max: id });
  });
  const allowEmpty = args.allow_empty_topic_name === true;
  const out = byTopic
    .sort((a, b) => b.max - a.max)
    .map((t) => ({ name: t.name === "" && !allowEmpty ? EMPTY_TOPIC_NAME : t.name, max_id: t.max }));
  return { reply: { topics: out } };
};

// ---- reactions, edits, deletion ---------------------------------------------------

/** Who hears about changes to a message: the channel's subscribers, or the DM's participants. */
export async function audience(
  ctx: ActorContext,
  state: ConvState,
  c: Caller,
): Promise<{ userIds: number[]; ch: ChannelInfo | null }> {
  if (isDmKey(state.key)) {
    const ids = state.key.slice(3).split(",").map(Number);
    if (!ids.includes(c.userId)) throw errors.invalidMessages();
    return { userIds: ids, ch: null };
  }
  const ch = await channelInfo(ctx, state, false, c.userId);
  if (!canRead(ch, c)) throw errors.invalidMessages();
  return { userIds: [...new Set([...ch.subscribers, c.userId])], ch };
}

export async function msgOf(reader: Reader, state: ConvState, id: number): Promise<Msg> {
  const m = (await getMsgs(reader, state, [id]))[0];
  if (!m) throw errors.invalidMessages();
  return m;
}

/** POST / DELETE /messages/{id}/reactions. */
const react: ConvHandler<"react"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  const m = await msgOf(ctx, state, args.message_id);
  const { userIds: subscribers, ch } = await audience(ctx, state, c);
  const userIds = await holders(ctx, state, ch, c, subscribers, [m.id]);
  const add = args.op === "add";
  const name = args.emoji_name;
  let code = args.emoji_code;
  let type = args.reaction_type;
  if (add) {
    if (name === undefined) throw errors.missingArgument("emoji_name");
    if (code === undefined) {
      const d = await resolveEmojiName(ctx, state.realmId, name);
      code = d.emojiCode;
      type ??= d.reactionType;
    }
    type ??= "unicode_emoji";
    await checkEmoji(ctx, state.realmId, name, code, type);
  } else {
    if (code === undefined) {
      if (name === undefined)
        throw errors.badRequest(
          "At least one of the following arguments must be present: emoji_name, emoji_code",
        );
      code = (await resolveEmojiName(ctx, state.realmId, name)).emojiCode;
    }
    type ??= "unicode_emoji";
  }
  const existing = m.reactions.find(
    (r) => r.user_id === c.userId && r.emoji_code === code && r.reaction_type === type,
  );
  if (add && existing) throw errors.reactionExists();
  if (!add && !existing) throw errors.reactionMissing();
  const reaction = add
    ? { emoji_name: name!, emoji_code: code, reaction_type: type, user_id: c.userId }
    : existing!;
  const reactions = add ? [...m.reactions, reaction] : m.reactions.filter((r) => r !== existing);
  // No `user` object since feature level 484: user_id names the reactor.
  const event: Obj = {
    type: "reaction",
    op: add ? "add" : "remove",
    message_id: m.id,
    emoji_name: reaction.emoji_name,
    emoji_code: reaction.emoji_code,
    reaction_type: reaction.reaction_type,
    user_id: c.userId,
  };
  const change = changeOf(state, m, { reactions: reactions as unknown as Value });
  // Reacting is participation (FL 214): a hand-off gives it to the
  // reactor's automatic topic policies (participation.ts); bots have none.
  const handoffs =
    add && ch && !c.isBot
      ? [
          participationHandoff(
            {
              realm: state.realmId,
              user: c.userId,
              stream_id: ch.stream_id,
              topic: m.topic,
              channel_muted: ch.muted_by?.includes(c.userId) ?? false,
            },
            state.key,
          ),
        ]
      : [];
  return {
    facts: [change.fact],
    writes: change.writes,
    events: [{ event, userIds }],
    handoffs,
    replyAfterHandoffs: handoffs.length > 0,
    reply: {},
  };
};

const PROPAGATE_MODES = ["change_one", "change_later", "change_all"];

/**
 * FL 379: a client that read the message before editing may send the
 * SHA-256 of the content it saw; a mismatch means someone else edited it
 * since. Checked for topic moves too, as Zulip does, so the parameter
 * means the same thing everywhere.
 */
function checkPrevContent(m: Msg, args: { prev_content_sha256?: string }): void {
  const expected = args.prev_content_sha256;
  if (typeof expected !== "string") return;
  if (createHash("sha256").update(m.content, "utf8").digest("hex") !== expected)
    throw errors.prevContentMismatch();
}

/** PATCH /messages/{id}: content and/or topic (within this channel). */
const edit: ConvHandler<"edit"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  const m = await msgOf(ctx, state, args.message_id);
  const { userIds: subscribers, ch } = await audience(ctx, state, c);
  // The message itself must be one the caller may read (protected history).
  if (
    ch &&
    !(await accessibleIds(ctx, state.realmId, c.userId, state.key, historyProtected(ch), [m.id])).length
  )
    throw errors.invalidMessages();
  const newContentRaw = args.content;
  const newTopicRaw = args.topic;
  const mode = args.propagate_mode ?? "change_one";
  if (!PROPAGATE_MODES.includes(mode)) throw errors.invalid("propagate_mode");
  if (newContentRaw === undefined && newTopicRaw === undefined) throw errors.nothingToChange();
  checkPrevContent(m, args);
  const now = Math.floor(ctx.now() / 1000);
  const facts: Obj[] = [];
  const writes: RecordWrite[] = [];
  const event: Obj = {
    type: "update_message",
    user_id: c.userId,
    edit_timestamp: now,
    message_id: m.id,
    message_ids: [m.id],
    rendering_only: false,
    flags: [],
  };
  const changes: Obj = {};
  const history: Obj = { user_id: c.userId, timestamp: now };
  const limits = await messageLimits(ctx, state.realmId);
  if (newContentRaw !== undefined) {
    checkContentEdit(limits, c, m, now);
    const content = normalizeContent(newContentRaw);
    const users = await roster(ctx, state.realmId);
    const env = await renderEnv(ctx, state, content, users, c);
    const rendered = renderMarkdown(content, env);
    checkGroupMentions(env);
    if (ch && env.wildcard) {
      await checkWildcardMention(
        ctx,
        state.realmId,
        c.userId,
        env.wildcard,
        env.wildcard === "channel"
          ? ch.subscribers.filter((id) => users.get(id)?.isActive).length
          : (state.topics.get(m.topic.toLowerCase())?.senders.size ?? 0),
      );
    }
    Object.assign(changes, { content, rendered, lastEditTimestamp: now, isMe: /^\/me( |$)/.test(content) });
    Object.assign(history, { prev_content: m.content, prev_rendered_content: m.rendered });
    Object.assign(event, {
      orig_content: m.content,
      orig_rendered_content: m.rendered,
      content,
      rendered_content: rendered,
      is_me_message: changes.isMe as boolean,
    });
  }
  let moved: number[] = [m.id];
  let allVisible = false;
  let preexisting = false;
  if (newTopicRaw !== undefined && ch) {
    const topic = normalizeTopic(newTopicRaw);
    if (isGuest(c.role)) throw errors.cannotEditMessage();
    if (topic !== m.topic) await checkTopicChange(ctx, state.realmId, limits, c, m, topic, ch, ch, now);
    checkTopicPolicy(ch.topics_policy, topic, (await roster(ctx, state.realmId)).topicsPolicy);
    if (topic !== m.topic) {
      const pool = await topicPool(ctx, state, ch, c, m);
      if (mode === "change_all" && !isResolveToggle(m.topic, topic)) {
        const all = (await getMsgs(ctx, state, pool)).filter((x): x is Msg => x !== null);
        checkChangeAllLimit(limits, c, all, { topicChanged: true, channelChanged: false }, now);
      }
      moved = movedIds(pool, m, mode);
      // Zulip's moved_all_visible_messages and the new topic's visible
      // preexisting messages, both as the caller may see them.
      allVisible = mode === "change_all" || moved.length === pool.length;
      preexisting = await visibleOthers(ctx, state, ch, c, topic, new Set(moved));
      Object.assign(history, { prev_topic: m.topic, topic });
      Object.assign(event, {
        stream_id: ch.stream_id,
        stream_name: ch.name,
        orig_subject: m.topic,
        subject: topic,
        topic_links: [],
        propagate_mode: mode,
        message_ids: moved,
      });
      const linkifiersNow = (await roster(ctx, state.realmId)).linkifiers ?? [];
      const others = moved.filter((id) => id !== m.id);
      for (const other of await getMsgs(ctx, state, others)) {
        if (!other) continue;
        const change = changeOf(state, other, {
          topic,
          topicLinks: topicLinks(topic, linkifiersNow) as unknown as Value,
          lastMovedTimestamp: now,
          editHistory: [
            { user_id: c.userId, timestamp: now, prev_topic: other.topic, topic },
            ...other.editHistory,
          ],
        });
        facts.push(change.fact);
        for (const w of change.writes) writes.push(w);
      }
      const links = topicLinks(topic, (await roster(ctx, state.realmId)).linkifiers ?? []);
      Object.assign(changes, { topic, topicLinks: links as unknown as Value, lastMovedTimestamp: now });
      event.topic_links = links as unknown as Value;
      await Promise.all(
        subscribers.map((uid) =>
          ctx.call(userRef(state.realmId, uid), "messagesMoved", { ids: moved, conv: state.key, topic }),
        ),
      );
    }
  } else if (newTopicRaw !== undefined) {
    throw errors.badRequest("Direct messages cannot have topics.");
  }
  if (!Object.keys(changes).length) return { reply: {} };
  const userIds = await holders(ctx, state, ch, c, subscribers, moved);
  changes.editHistory = [history, ...m.editHistory] as unknown as Value;
  const own = changeOf(state, m, changes);
  facts.unshift(own.fact);
  writes.unshift(...own.writes);
  if (ch && event.stream_id === undefined) event.stream_id = ch.stream_id;
  const reply: Obj = {};
  // A topic change's breadcrumbs (breadcrumbs.ts): a hand-off journaled
  // with the edit, posted once under its key before the edit answers.
  const handoffs: { subject: string; data: Obj }[] = [];
  if (ch && event.subject !== undefined && moved.length) {
    const acting = (await roster(ctx, state.realmId)).get(c.userId);
    handoffs.push(
      breadcrumbsHandoff({
        key: `${state.key}:${m.id}:${randomBytes(8).toString("hex")}`,
        caller: c,
        report: {
          actor: silentMention(acting?.fullName ?? "", c.userId),
          oldStreamId: ch.stream_id,
          oldStreamName: ch.name,
          oldTopic: m.topic,
          newStreamId: ch.stream_id,
          newStreamName: ch.name,
          newTopic: String(event.subject),
          count: moved.length,
          all: allVisible,
          preexisting,
          messageId: m.id,
        },
        notify: {
          toOld: args.send_notification_to_old_thread === true,
          toNew: args.send_notification_to_new_thread !== false,
          origin: args.link_origin,
        },
      }),
    );
  }
  // Links an edit adds are claimed as a send's (only the sender may edit content).
  if (typeof changes.content === "string") {
    await claimUploads(ctx, state, c.userId, m.id, m.timestamp, changes.content);
    // FL 285: links the edit dropped release their files; the editor's that
    // no message links any more are the reply's detached_uploads.
    const released = await ctx.call(uploadsDirectoryRef(state.realmId), "releaseLinks", {
      messageId: m.id,
      editorId: c.userId,
      dropped: linkedPathIds(m.content, state.realmId),
      kept: linkedPathIds(changes.content, state.realmId),
    });
    reply.detached_uploads = released.detached as unknown as Value;
  }
  return {
    facts,
    writes,
    events: [{ event, userIds }],
    ...(handoffs.length ? { handoffs, replyAfterHandoffs: true } : {}),
    reply,
  };
};

// ---- moves between channels ------------------------------------------------------
//
// Conversations never call each other, so a move is one turn of the source
// and a durable hand-off (move.ts): `move` on the source decides it (checks,
// the moved messages as they will read) and journals it; the hand-off's
// handler runs `moveIn` on the target (adds them), then `completeMove` on
// the source (drops them, re-points the users' flag entries, emits the
// events), then the breadcrumbs, each once per move id.

async function targetInfo(ctx: ActorContext, state: ConvState, streamId: number): Promise<ChannelInfo> {
  try {
    return await sendContext(ctx, state.realmId, streamId);
  } catch {
    throw errors.invalidChannelId();
  }
}

/**
 * The ids a topic edit or move of `m` takes along (ascending), from
 * `pool`: the messages of m's topic the caller may access (`topicPool`).
 */
function movedIds(pool: number[], m: Msg, mode: string): number[] {
  if (mode === "change_all") return [...pool];
  if (mode === "change_later") return pool.slice(lowerBound(pool, m.id));
  return [m.id];
}

/**
 * The messages of m's topic the caller may access, ascending, which a
 * topic edit or move may take along: in a channel with protected history
 * a late subscriber must not move (or learn of) the older messages they
 * cannot read. `m` itself must be one of them ("Invalid message(s)").
 */
async function topicPool(
  ctx: ActorContext,
  state: ConvState,
  ch: ChannelInfo,
  c: Caller,
  m: Msg,
): Promise<number[]> {
  const ids = await allIds(ctx, state, m.topic);
  const pool = await accessibleIds(ctx, state.realmId, c.userId, state.key, historyProtected(ch), ids);
  if (!pool.includes(m.id)) throw errors.invalidMessages();
  return pool;
}

/** Whether the topic `topic` holds messages the caller may access besides `moved`. */
async function visibleOthers(
  ctx: ActorContext,
  state: ConvState,
  ch: ChannelInfo,
  c: Caller,
  topic: string,
  moved: Set<number>,
): Promise<boolean> {
  const others = (await allIds(ctx, state, topic)).filter((i) => !moved.has(i));
  const prot = historyProtected(ch);
  return (await accessibleIds(ctx, state.realmId, c.userId, state.key, prot, others)).length > 0;
}

/**
 * Who hears of a change to messages `ids`: in a channel with protected
 * history, only those of `userIds` who received one of them (and the
 * acting user); a later subscriber would otherwise learn of messages (ids,
 * topic, content) they cannot read. Else everyone in `userIds`.
 */
async function holders(
  ctx: ActorContext,
  state: ConvState,
  ch: ChannelInfo | null,
  c: Caller,
  userIds: number[],
  ids: number[],
): Promise<number[]> {
  if (!ch || !historyProtected(ch)) return userIds;
  const has = await Promise.all(
    userIds.map(
      async (uid) =>
        uid === c.userId || (await accessibleIds(ctx, state.realmId, uid, state.key, true, ids)).length > 0,
    ),
  );
  return userIds.filter((_, i) => has[i]);
}

/**
 * The source: may the caller move this message to `stream_id`? Then the
 * move, decided: which messages and how they will read, journaled with
 * the hand-off that carries it out (move.ts).
 */
const move: ConvHandler<"move"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  const m = await msgOf(ctx, state, args.message_id);
  if (isDmKey(state.key)) throw errors.dmCannotMoveToChannel();
  const ch = await channelInfo(ctx, state);
  if (!canRead(ch, c)) throw errors.invalidMessages();
  const pool = await topicPool(ctx, state, ch, c, m);
  if (args.content !== undefined) throw errors.contentWhileMovingChannel();
  checkPrevContent(m, args);
  const mode = args.propagate_mode ?? "change_one";
  if (!PROPAGATE_MODES.includes(mode)) throw errors.invalid("propagate_mode");
  const target = await targetInfo(ctx, state, args.stream_id);
  if (
    target.is_archived ||
    !canRead(target, c) ||
    (target.invite_only && !target.subscribers.includes(c.userId))
  )
    throw errors.invalidChannelId();
  if (!isAdmin(c.role)) {
    const realmValue = await realmGroupSetting(
      ctx,
      state.realmId,
      "can_move_messages_between_channels_group",
    );
    const allowed =
      (await isUserInGroupSetting(ctx, state.realmId, realmValue, c.userId)) ||
      (await isUserInGroupSetting(
        ctx,
        state.realmId,
        ch.groups.can_move_messages_out_of_channel_group!,
        c.userId,
      ));
    if (!allowed) throw errors.cannotMoveMessage();
  }
  const canSend = target.groups.can_send_message_group!;
  if (canSend !== EVERYONE_GROUP && !(await isUserInGroupSetting(ctx, state.realmId, canSend, c.userId)))
    throw errors.noPostPermission();
  const now = Math.floor(ctx.now() / 1000);
  const limits = await messageLimits(ctx, state.realmId);
  checkChannelMoveLimit(limits, c, m, now);
  const topic = args.topic !== undefined ? normalizeTopic(args.topic) : m.topic;
  const topicChanged = topic !== m.topic;
  if (topicChanged) await checkTopicChange(ctx, state.realmId, limits, c, m, topic, ch, target, now);
  const realmNow = await roster(ctx, state.realmId);
  checkTopicPolicy(target.topics_policy, topic, realmNow.topicsPolicy);
  const links = topicLinks(topic, realmNow.linkifiers ?? []);
  const movedList = movedIds(pool, m, mode);
  const found = (await getMsgs(ctx, state, movedList)).filter((x): x is Msg => x !== null);
  if (mode === "change_all" && !(topicChanged && isResolveToggle(m.topic, topic)))
    checkChangeAllLimit(limits, c, found, { topicChanged, channelChanged: true }, now);
  const msgs = found.map((stored) => {
    const x = structuredClone(stored);
    const history: Obj = {
      user_id: c.userId,
      timestamp: now,
      prev_stream: ch.stream_id,
      stream: target.stream_id,
    };
    if (topicChanged) Object.assign(history, { prev_topic: x.topic, topic });
    x.editHistory = [history, ...x.editHistory];
    x.topic = topic;
    x.topicLinks = links.map((l) => ({ ...l }));
    x.lastMovedTimestamp = now;
    return x;
  });
  // A request repeated while its move is pending (the gateway retries one
  // whose node died after the decision) joins it: the same id, so each
  // step still runs once. Any other move of those messages waits for it.
  const ids = msgs.map((x) => x.id);
  const same = (p: PendingMove) =>
    p.target === target.stream_id && p.topic === topic && p.ids.join() === ids.join();
  const overlapping = state.moves.filter((p) => p.ids.some((i) => ids.includes(i)));
  if (overlapping.some((p) => !same(p))) throw errors.invalidMessages();
  const pending = overlapping[0];
  const moveId = pending?.id ?? `${state.key}:${m.id}:${randomBytes(8).toString("hex")}`;
  const acting = realmNow.get(c.userId);
  const order: MoveOrder = {
    move: moveId,
    caller: c,
    from: ch.stream_id,
    msgs,
    complete: {
      ids,
      message_id: args.message_id,
      stream_id: target.stream_id,
      topic,
      orig_topic: m.topic,
      topic_changed: topicChanged,
      propagate_mode: mode,
      timestamp: now,
      move_id: moveId,
    },
    report: {
      actor: silentMention(acting?.fullName ?? "", c.userId),
      oldStreamId: ch.stream_id,
      oldStreamName: ch.name,
      oldTopic: m.topic,
      newStreamId: target.stream_id,
      newStreamName: target.name,
      newTopic: topic,
      count: msgs.length,
      // Zulip's moved_all_visible_messages: no message of the original
      // topic the caller may read stays behind.
      all: mode === "change_all" || movedList.length === pool.length,
      messageId: args.message_id,
    },
    notify: {
      toOld: args.send_notification_to_old_thread === true,
      toNew: args.send_notification_to_new_thread !== false,
      origin: args.link_origin,
    },
  };
  return {
    // A joined move is journaled already, with its own hand-off.
    ...(pending
      ? {}
      : {
          facts: [fact({ type: "moveDecided", move: { id: moveId, target: target.stream_id, topic, ids } })],
        }),
    handoffs: [moveHandoff(order)],
    replyAfterHandoffs: true,
    reply: {},
  };
};

/** The move's hand-off (target): take the moved messages in, once per move id. */
const moveIn: ConvHandler<"moveIn"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  if (isDmKey(state.key)) throw errors.internal();
  // A repeated hand-off (its node died after this step) adds nothing, even
  // when the messages have left this channel since.
  const done = state.movedIn.find(([k]) => k === args.move_id);
  if (done) return { reply: { preexisting: done[1] } };
  const all = args.msgs;
  const present = new Set(
    await presentIds(
      ctx,
      state,
      all.map((m) => m.id),
    ),
  );
  const msgs = all.filter((m) => !present.has(m.id));
  await firstMessageAdded(
    ctx,
    state,
    msgs.map((m) => m.id),
  );
  // For the gateway's move notifications: did the target topic already hold
  // other messages the caller may read? (Older ones of a protected history
  // must not show through the notice's wording.)
  const moved = new Set(all.map((m) => m.id));
  const topic = all[0]?.topic;
  const preexisting =
    topic !== undefined && (await visibleOthers(ctx, state, await channelInfo(ctx, state), c, topic, moved));
  return {
    facts: [
      ...msgs.map((msg) => fact({ type: "msgAdded", msg, stored: true })),
      fact({ type: "movedIn", move: args.move_id, preexisting }),
    ],
    writes: addWrites(state, msgs),
    reply: { preexisting },
  };
};

/**
 * The move's hand-off (source), once per pending move (a repeat, or a move
 * not decided here, changes nothing): drop the moved messages; users subscribed to both
 * channels keep their flags (entries re-pointed), others lose their rows,
 * and those who lose access get delete_message; subscribers of a target
 * with protected history gain read rows. Zulip's do_update_message.
 */
const completeMove: ConvHandler<"completeMove"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  if (!state.moves.some((p) => p.id === args.move_id)) return { reply: {} };
  const done = fact({ type: "moveDone", move: args.move_id });
  const movedMsgs = (await getMsgs(ctx, state, args.ids)).filter((m): m is Msg => m !== null);
  if (!movedMsgs.length) return { facts: [done], reply: {} };
  const ids = movedMsgs.map((m) => m.id);
  const byId = new Map(movedMsgs.map((m) => [m.id, m]));
  const ch = await channelInfo(ctx, state);
  const target = await targetInfo(ctx, state, args.stream_id);
  const users = await roster(ctx, state.realmId);
  const topic = args.topic;
  const origTopic = args.orig_topic;
  const targetKey = String(target.stream_id);
  const oldSubs = new Set(ch.subscribers);
  const newSubs = new Set(target.subscribers);
  // Everyone subscribed to the target keeps their rows (historical ones too), re-pointed.
  const staying = [...newSubs];
  const losingRows = [...oldSubs].filter((u) => !newSubs.has(u));
  const guest = (u: number) => isGuest(users.get(u)?.role ?? 600);
  // Every subscriber of a protected target may read what arrives there, so
  // each gets a row (Zulip inserts them all, keeping rows that exist).
  const gaining = historyProtected(target) ? [...newSubs] : [];
  // Received rows (received.ts) of the source stay with their users as
  // entries of the target; those of the target's subscribers whose spans
  // cover a moved message would appear as received there: they get read
  // rows, historical in a public target, as Zulip gives no row then.
  const [sourceSpans, targetSpans] = await Promise.all([
    channelSpans(ctx, state),
    channelSpans(ctx, { ...state, key: targetKey }),
  ]);
  const receivedOf = (uid: number) =>
    ids
      .filter((id) => inSpans(sourceSpans.get(uid) ?? [], id))
      .map((id): [number, string, number] => [id, state.key, byId.get(id)!.senderId]);
  const coveredInTarget = new Map<number, number[]>();
  for (const [uid, spans] of targetSpans) {
    if (gaining.includes(uid)) continue;
    const covered = ids.filter((id) => inSpans(spans, id) && !inSpans(sourceSpans.get(uid) ?? [], id));
    if (covered.length) coveredInTarget.set(uid, covered);
  }
  // Who held rows of the moved messages (the user actors say how many).
  const held = new Set<number>();
  const track = (uid: number) => (r: { held: number }) => {
    if (r.held > 0) held.add(uid);
  };
  await Promise.all([
    ...staying.map((uid) =>
      ctx
        .call(userRef(state.realmId, uid), "messagesMoved", {
          ids,
          conv: targetKey,
          topic,
          received: receivedOf(uid),
        })
        .then(track(uid)),
    ),
    ...losingRows.map(async (uid) => {
      // Held as received rows: the move is news to them (protected-history check below).
      if (receivedOf(uid).length) held.add(uid);
    }),
    ...[...coveredInTarget].map(([uid, covered]) =>
      ctx.call(userRef(state.realmId, uid), "receiveMessages", {
        items: covered.map((id): Delivery => [
          id,
          targetKey,
          historyProtected(target) ? ["read"] : ["read", "historical"],
          topic,
          byId.get(id)!.senderId,
        ]),
      }),
    ),
    ...losingRows.map((uid) =>
      ctx.call(userRef(state.realmId, uid), "messagesDeleted", { ids }).then(track(uid)),
    ),
    ...gaining.map((uid) =>
      ctx.call(userRef(state.realmId, uid), "receiveMessages", {
        items: ids.map((id): Delivery => [id, targetKey, ["read"], topic, byId.get(id)!.senderId]),
      }),
    ),
  ]);
  // In a source with protected history, subscribers who received none of the
  // moved messages never could read them: they hear nothing of the move.
  const knew = (u: number) => !historyProtected(ch) || held.has(u) || u === c.userId;
  const losingAccess = (target.invite_only ? losingRows : losingRows.filter(guest)).filter(knew);
  const lost = new Set(losingAccess);
  // Guests who see the target but never saw the source hear nothing (Zulip does the same).
  const audienceIds = new Set([...[...oldSubs].filter(knew), ...newSubs, c.userId]);
  const recipients = [...audienceIds].filter(
    (u) => !lost.has(u) && !(guest(u) && newSubs.has(u) && !oldSubs.has(u)),
  );
  const event: Obj = {
    type: "update_message",
    user_id: c.userId,
    edit_timestamp: args.timestamp,
    message_id: args.message_id,
    message_ids: ids,
    rendering_only: false,
    flags: [],
    stream_id: ch.stream_id,
    stream_name: ch.name,
    new_stream_id: target.stream_id,
    propagate_mode: args.propagate_mode,
    orig_subject: origTopic,
  };
  if (args.topic_changed) {
    event.subject = topic;
    event.topic_links = topicLinks(topic, users.linkifiers ?? []) as unknown as Value;
  }
  const events = [{ event, userIds: recipients }];
  if (losingAccess.length) {
    events.push({
      event: {
        type: "delete_message",
        message_ids: ids,
        message_type: "stream",
        stream_id: ch.stream_id,
        topic: origTopic,
      },
      userIds: losingAccess,
    });
  }
  await firstMessageRemoved(ctx, state, ids);
  return {
    facts: [...removedFacts(movedMsgs), done],
    writes: removeWrites(state, movedMsgs),
    events,
    reply: {},
  };
};

/** DELETE /messages/{id}: administrators, or the sender. */
/**
 * Zulip's realm permissions to delete a message (FL 281, 291): anyone's
 * with can_delete_any_message_group, one's own with
 * can_delete_own_message_group.
 */
async function checkMayDelete(
  ctx: ActorContext,
  realmId: number,
  userId: number,
  senderId: number,
  ownLimit: () => Promise<void>,
) {
  const any = await realmGroupSetting(ctx, realmId, "can_delete_any_message_group");
  if (await isUserInGroupSetting(ctx, realmId, any, userId)) return;
  if (senderId !== userId) throw errors.cannotDeleteMessage();
  const own = await realmGroupSetting(ctx, realmId, "can_delete_own_message_group");
  if (!(await isUserInGroupSetting(ctx, realmId, own, userId))) throw errors.cannotDeleteMessage();
  // FL 100: deleting one's own message only within message_content_delete_limit_seconds.
  await ownLimit();
}

/** Zulip's Realm.WILDCARD_MENTION_THRESHOLD. */
const WILDCARD_MENTION_THRESHOLD = 15;

/**
 * Zulip's stream_wildcard_mention_allowed / topic_wildcard_mention_allowed
 * (FL 229, 352): above 15 channel subscribers (or topic participants), a
 * wildcard mention needs can_mention_many_users_group.
 */
async function checkWildcardMention(
  ctx: ActorContext,
  realmId: number,
  userId: number,
  kind: "channel" | "topic",
  reach: number,
): Promise<void> {
  if (reach <= WILDCARD_MENTION_THRESHOLD) return;
  const allowed = await realmGroupSetting(ctx, realmId, "can_mention_many_users_group");
  if (await isUserInGroupSetting(ctx, realmId, allowed, userId)) return;
  throw kind === "channel"
    ? errors.streamWildcardMentionNotAllowed()
    : errors.topicWildcardMentionNotAllowed();
}

const remove: ConvHandler<"remove"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  const m = await msgOf(ctx, state, args.message_id);
  const { userIds: subscribers, ch } = await audience(ctx, state, c);
  await checkMayDelete(ctx, state.realmId, c.userId, m.senderId, () =>
    messageLimits(ctx, state.realmId).then((l) => checkDeleteLimit(l, m, Math.floor(ctx.now() / 1000))),
  );
  const userIds = await holders(ctx, state, ch, c, subscribers, [m.id]);
  await Promise.all(
    subscribers.map((uid) => ctx.call(userRef(state.realmId, uid), "messagesDeleted", { ids: [m.id] })),
  );
  await ctx.call(uploadsDirectoryRef(state.realmId), "messagesRemoved", { ids: [m.id] });
  await firstMessageRemoved(ctx, state, [m.id]);
  const event: Obj = {
    type: "delete_message",
    message_type: ch ? "stream" : "private",
    message_ids: [m.id],
    message_id: m.id,
  };
  if (ch) Object.assign(event, { stream_id: ch.stream_id, topic: m.topic });
  return {
    facts: removedFacts([m]),
    writes: removeWrites(state, [m]),
    events: [{ event, userIds }],
    reply: {},
  };
};

/**
 * Internal ({} -> {count, topics}): what the conversation holds. Activating
 * it converts old-shape state (Behavior.upgrade) before this turn runs, so
 * `manage migrate` calls it on every conversation.
 */
const storeStatus: ConvHandler<"storeStatus"> = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  return { reply: { count: state.count, topics: state.topics.size, legacy: state.legacy !== null } };
};

export const conversationHandlers: ConvHandlers<
  | "storeStatus"
  | "send"
  | "fetch"
  | "getByIds"
  | "locateIds"
  | "topics"
  | "react"
  | "edit"
  | "remove"
  | "move"
  | "moveIn"
  | "completeMove"
> = {
  storeStatus,
  send,
  fetch,
  getByIds,
  locateIds,
  topics,
  react,
  edit,
  remove,
  move,
  moveIn,
  completeMove,
};
