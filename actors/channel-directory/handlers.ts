// Handlers of the per-realm channel directory (kind channelDirectory, key
// "directory"): channel creation and settings, subscriptions and their
// properties, and the channel lists. Calls go one way: this actor calls the
// realm (`roster`, `publicInfo`) and the permissions module, which never
// call back.

import { dict, own } from "../dict.ts";
import { errors } from "../errors.ts";
import {
  checkGroupSettingUpdate,
  checkGroupSettingValue,
  isUserInGroupSetting,
  realmGroupSetting,
  recordChannelGroupSettings,
} from "../permissions/index.ts";
import { SYSTEM_GROUP_ID } from "../group/index.ts";
import { realmRef } from "../addresses.ts";
import type { ActorContext, Obj, OutEvent, Value } from "../types.ts";
import {
  Turn,
  canAccessContent,
  canAdminister,
  canSeeMetadata,
  isAdmin,
  isGuest,
  isSubscribed,
  metadataAudience,
  peerChanges,
  type RosterEntry,
} from "./access.ts";
import {
  formatChannel,
  formatSub,
  pickColor,
  renderDescription,
  subscriberFields,
  subscriberMode,
  type SubscriberMode,
} from "./format.ts";
import { gainedAccessEvents, newSubscriberCreateEvents } from "./visibility-events.ts";
import { folderById } from "./folders.ts";
import { accessChangeHandoffs } from "./user-access.ts";
import { botPostsHandoff, MAX_BULK_NEW_SUBSCRIPTION_MESSAGES } from "./bot-posts.ts";
import {
  GROUP_SETTINGS,
  activeSubscriberIds,
  applyDirFact as applyCopy,
  cloneDir,
  type Channel,
  type DirFact,
  type DirState,
  type GroupValue,
  type Sub,
  spansOf,
  subscriberListsOf,
} from "./state.ts";
import type { ChannelDirectoryProtocol, DirHandler, DirHandlers } from "./protocol.ts";
import type { Span } from "../spans.ts";
import {
  checkChannelName,
  checkColor,
  checkDescription,
  checkRetention,
  checkTopicsPolicy,
} from "./validate.ts";
import type { ArgsOf } from "../protocol.ts";

const NOBODY_GROUP = SYSTEM_GROUP_ID["role:nobody"];

function fact(f: DirFact): Obj {
  return f as unknown as Obj;
}

/**
 * A bound of a received span (state.ts `Span`): an id of the realm's
 * message counter, so every message sent after the subscription changed
 * has a greater id and every one sent before a smaller one.
 */
export function spanBound(ctx: ActorContext, realmId: number): Promise<number> {
  return ctx.nextId(`message.${realmId}`);
}

/** Defaults of the channel group settings, as Zulip sets them for a new channel. */
export const GROUP_DEFAULTS: Record<string, string | "creator"> = {
  can_add_subscribers_group: "role:nobody",
  can_administer_channel_group: "creator",
  can_create_topic_group: "role:everyone",
  can_delete_any_message_group: "role:nobody",
  can_delete_own_message_group: "role:nobody",
  can_move_messages_out_of_channel_group: "role:nobody",
  can_move_messages_within_channel_group: "role:nobody",
  can_remove_subscribers_group: "role:administrators",
  can_resolve_topics_group: "role:nobody",
  can_send_message_group: "role:everyone",
  can_subscribe_group: "role:nobody",
};
/** Settings where role:everyone is refused, as Zulip refuses it. */
export const NO_EVERYONE: ReadonlySet<string> = new Set([
  "can_add_subscribers_group",
  "can_administer_channel_group",
  "can_subscribe_group",
]);

function channelById(state: DirState, id: number): Channel {
  const ch = state.channels[String(id)];
  if (!ch) throw errors.invalidChannelId();
  return ch;
}

export function newSub(state: DirState, userId: number, ch: Channel): Sub {
  return {
    active: true,
    color: pickColor(state, userId),
    isMuted: false,
    pinToTop: false,
    desktopNotifications: null,
    audibleNotifications: null,
    pushNotifications: ch.defaultPushNotifications ? true : null,
    emailNotifications: null,
    wildcardMentionsNotify: null,
  };
}

/**
 * `userId` subscribes to `ch`: the fact appended to `facts`, and `s` with it
 * applied (a later subscription's colour depends on the earlier ones).
 */
export function subscribeFact(
  s: DirState,
  facts: Obj[],
  ch: Channel,
  userId: number,
  from?: number,
): DirState {
  const sub = newSub(s, userId, ch);
  const f = fact({
    type: "subscribed",
    channelId: ch.id,
    userId,
    sub,
    ...(from === undefined ? {} : { from }),
  });
  facts.push(f);
  return applyCopy(s, f);
}

/** A copy of the state with `facts` applied, to format replies and events from. */
function after(state: DirState, facts: Obj[]): DirState {
  let s = cloneDir(state);
  for (const f of facts) s = applyCopy(s, f);
  return s;
}

/** A new channel's settings as createChannel and subscribe take them (protocol.ts `creationArgs`). */
type CreationArgs = ArgsOf<ChannelDirectoryProtocol, "createChannel" | "subscribe">;

// ---- creation --------------------------------------------------------------

interface CreateOpts {
  description: string;
  inviteOnly: boolean;
  isWebPublic: boolean;
  historyPublic: boolean | undefined;
  retentionDays: number | null;
  topicsPolicy: string;
  folderId: number | null;
  isDefault: boolean;
  groups: Record<string, GroupValue>;
}

/** Shared checks of creation parameters (POST /channels/create and the legacy subscribe). */
async function checkCreateOpts(
  t: Turn,
  me: RosterEntry,
  args: CreationArgs,
  state: DirState,
): Promise<CreateOpts> {
  const inviteOnly = args.invite_only ?? false;
  const isWebPublic = args.is_web_public ?? false;
  const isDefault = args.is_default_stream ?? false;
  if (isWebPublic) {
    const info = await t.ctx.call(realmRef(t.realmId), "publicInfo", {});
    if (info.webPublicAccessEnabled !== true) throw errors.webPublicDisabled();
  }
  await checkMayCreate(t, me, inviteOnly, isWebPublic);
  if (isDefault && !isAdmin(me.role)) throw errors.mustBeAdmin();
  if (isDefault && inviteOnly) throw errors.privateCannotBeDefault();
  let retentionDays: number | null = null;
  if (args.message_retention_days !== undefined) {
    retentionDays = checkRetention(args.message_retention_days);
    if (me.role !== 100) throw errors.mustBeOwner();
  }
  const topicsPolicy = args.topics_policy === undefined ? "inherit" : checkTopicsPolicy(args.topics_policy);
  await checkMaySetTopicsPolicy(t, me, topicsPolicy);
  const raw = args.groups ?? {};
  const groups: Record<string, GroupValue> = {};
  for (const name of GROUP_SETTINGS) {
    if (raw[name] !== undefined) {
      groups[name] = await checkGroupSettingValue(t.ctx, t.realmId, raw[name], name, {
        allowEveryone: !NO_EVERYONE.has(name),
      });
    } else {
      const d = GROUP_DEFAULTS[name]!;
      groups[name] = d === "creator" ? { direct_members: [me.userId], direct_subgroups: [] } : t.sys[d]!;
    }
  }
  const historyPublic = args.history_public_to_subscribers;
  return {
    description: checkDescription(args.description ?? ""),
    inviteOnly,
    isWebPublic,
    historyPublic,
    retentionDays,
    topicsPolicy,
    folderId:
      args.folder_id === undefined || args.folder_id === null ? null : folderById(state, args.folder_id).id,
    isDefault,
    groups,
  };
}

/** The realm's can_create_{public,private,web_public}_channel_group. */
async function checkMayCreate(
  t: Turn,
  me: RosterEntry,
  inviteOnly: boolean,
  webPublic: boolean,
): Promise<void> {
  const setting = webPublic
    ? "can_create_web_public_channel_group"
    : inviteOnly
      ? "can_create_private_channel_group"
      : "can_create_public_channel_group";
  const value = await realmGroupSetting(t.ctx, t.realmId, setting);
  if (!(await t.inGroup(value, me.userId))) throw errors.insufficientPermission();
}

/**
 * Zulip's can_set_topics_policy: administrators, or members of the realm's
 * can_set_topics_policy_group (FL 392); "inherit" needs neither.
 */
async function checkMaySetTopicsPolicy(t: Turn, me: RosterEntry, policy: string): Promise<void> {
  if (policy === "inherit" || isAdmin(me.role)) return;
  const value = await realmGroupSetting(t.ctx, t.realmId, "can_set_topics_policy_group");
  if (!(await t.inGroup(value, me.userId))) throw errors.insufficientPermission();
}

/** Subscribing other users: the realm's can_add_subscribers_group (or the channel's). */
async function mayAddOthers(t: Turn, me: RosterEntry): Promise<boolean> {
  if (isGuest(me.role)) return false;
  return t.inGroup(await realmGroupSetting(t.ctx, t.realmId, "can_add_subscribers_group"), me.userId);
}

async function newChannel(
  t: Turn,
  me: RosterEntry,
  name: string,
  o: CreateOpts,
  description?: string,
): Promise<Channel> {
  const id = await t.ctx.nextId(`channel.${t.realmId}`);
  const desc = description === undefined ? o.description : checkDescription(description);
  return {
    id,
    name,
    description: desc,
    renderedDescription: renderDescription(desc),
    dateCreated: Math.floor(t.ctx.now() / 1000),
    creatorId: me.userId,
    inviteOnly: o.inviteOnly,
    isWebPublic: o.isWebPublic,
    // Public channels always have public history (Zulip's default_value_for_history_public_to_subscribers).
    historyPublic: o.inviteOnly ? (o.historyPublic ?? false) : true,
    retentionDays: o.retentionDays,
    topicsPolicy: o.topicsPolicy,
    folderId: o.folderId,
    isArchived: false,
    isDefault: o.isDefault,
    defaultPushNotifications: false,
    firstMessageId: null,
    isRecentlyActive: true,
    lastMessageDay: null,
    groups: { ...o.groups },
  };
}

/**
 * Events for channels just created and subscriptions just added, computed
 * on the state after the facts.
 */
export function subscriptionEvents(
  t: Turn,
  s: DirState,
  created: Channel[],
  added: { channelId: number; userId: number }[],
): OutEvent[] {
  const events: OutEvent[] = [];
  for (const ch of created) {
    // The channel as it was before this request's subscriptions: the
    // peer_add and subscription add events below bring each client's count
    // up to date, so counting the new subscribers here would count them twice.
    const stream = formatChannel(s, s.channels[String(ch.id)]!, t.sys);
    const joined = added.filter((a) => a.channelId === ch.id).length;
    if (typeof stream.subscriber_count === "number") stream.subscriber_count -= joined;
    events.push({
      event: { type: "stream", op: "create", streams: [stream] },
      userIds: metadataAudience(t, s, s.channels[String(ch.id)]!),
    });
  }
  const byUser = new Map<number, number[]>();
  const byChannel = new Map<number, number[]>();
  for (const a of added) {
    (byUser.get(a.userId) ?? byUser.set(a.userId, []).get(a.userId)!).push(a.channelId);
    (byChannel.get(a.channelId) ?? byChannel.set(a.channelId, []).get(a.channelId)!).push(a.userId);
  }
  const isNew = new Set(created.map((ch) => ch.id));
  events.push(...newSubscriberCreateEvents(t, s, new Map([...byChannel].filter(([id]) => !isNew.has(id)))));
  for (const [userId, channelIds] of byUser) {
    const subs = channelIds.map((id) => {
      const ch = s.channels[String(id)]!;
      return formatSub(s, ch, s.subs[String(id)]![String(userId)]!, t.sys, true);
    });
    events.push({ event: { type: "subscription", op: "add", subscriptions: subs }, userIds: [userId] });
  }
  events.push(...peerChanges(t, s, byChannel, "peer_add"));
  return events;
}

function resolveUserIds(t: Turn, ids: number[]): RosterEntry[] {
  return ids.map((id) => {
    const u = t.users.get(id);
    if (!u || !u.isActive) throw errors.invalidUserId(id);
    return u;
  });
}

/** POST /channels/create. */
const createChannel: DirHandler<"createChannel"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const name = checkChannelName(args.name);
  if (state.byName[name.toLowerCase()] !== undefined) throw errors.channelAlreadyExists(name);
  const opts = await checkCreateOpts(t, me, args, state);
  const subscribers = resolveUserIds(t, args.subscribers ?? []);
  if (subscribers.some((u) => u.userId !== me.userId) && !(await mayAddOthers(t, me))) {
    throw errors.insufficientPermission();
  }
  const ch = await newChannel(t, me, name, opts);
  const facts: Obj[] = [fact({ type: "channelCreated", channel: ch })];
  const added: { channelId: number; userId: number }[] = [];
  let s = after(state, facts);
  const from = subscribers.length ? await spanBound(ctx, state.realmId) : 0;
  for (const u of new Map(subscribers.map((u) => [u.userId, u])).values()) {
    s = subscribeFact(s, facts, ch, u.userId, from);
    added.push({ channelId: ch.id, userId: u.userId });
  }
  await recordChannelGroupSettings(ctx, t.realmId, ch.id, ch.groups);
  // Answered once the queue shards know of the new subscriptions
  // (OutEvent.channel) and the announcement is posted (bot-posts.ts).
  const events = subscriptionEvents(t, s, [ch], added);
  const posts = await botPostsHandoff(ctx, t.realmId, s, caller!, {
    me,
    created: [{ id: ch.id, name: ch.name }],
    announce: args.announce === true,
    notices: [],
  });
  return {
    facts,
    events,
    handoffs: [...(await accessChangeHandoffs(t, state, s, [ch.id])), ...posts],
    replyAfterEvents: true,
    ...(posts.length ? { replyAfterHandoffs: true } : {}),
    reply: { id: ch.id },
  };
};

// ---- legacy subscribe (POST /users/me/subscriptions) ------------------------

function resolvePrincipals(
  t: Turn,
  me: RosterEntry,
  principals: (number | string)[] | undefined,
): RosterEntry[] {
  if (principals === undefined) return [me];
  // Since FL 208 an unknown or deactivated principal is a 400 (Zulip's
  // bulk_access_users_by_*: every id is looked up before any is checked).
  const found = principals.map((p) =>
    typeof p === "number" ? t.users.get(p) : t.byEmail.get(p.trim().toLowerCase()),
  );
  const users: RosterEntry[] = [];
  for (const u of found) {
    if (!u) throw errors.noSuchUser();
    users.push(u);
  }
  if (users.some((u) => !u.isActive)) throw errors.userDeactivated();
  return users;
}

/** May `me` subscribe `targets` to the existing channel `ch`? */
async function maySubscribe(
  t: Turn,
  state: DirState,
  ch: Channel,
  me: RosterEntry,
  others: boolean,
): Promise<boolean> {
  // Subscriptions in archived channels may change since FL 362.
  if (others && (await t.inGroup(ch.groups.can_add_subscribers_group!, me.userId))) return true;
  if (!ch.inviteOnly) return !isGuest(me.role);
  if (isSubscribed(state, ch, me.userId) || isAdmin(me.role)) return true;
  return !others && (await t.inGroup(ch.groups.can_subscribe_group!, me.userId));
}

export const subscribe: DirHandler<"subscribe"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const wanted = args.subscriptions ?? [];
  const targets = resolvePrincipals(t, me, args.principals);
  const others = targets.some((u) => u.userId !== me.userId);
  const othersAllowed = others ? await mayAddOthers(t, me) : true;
  const fatal = args.authorization_errors_fatal ?? true;

  const facts: Obj[] = [];
  let s = cloneDir(state);
  const created: Channel[] = [];
  const targetChannels: Channel[] = [];
  const unauthorized: string[] = [];
  let opts: CreateOpts | null = null;
  for (const w of wanted) {
    const name = checkChannelName(w.name);
    const id = s.byName[name.toLowerCase()];
    if (id === undefined) {
      opts ??= await checkCreateOpts(t, me, args, state);
      const ch = await newChannel(t, me, name, opts, w.description);
      const f = fact({ type: "channelCreated", channel: ch });
      facts.push(f);
      s = applyCopy(s, f);
      created.push(ch);
      targetChannels.push(ch);
      if (others && !othersAllowed) throw errors.insufficientPermission();
      continue;
    }
    const ch = s.channels[String(id)]!;
    if (targetChannels.includes(ch)) continue;
    if (others && !othersAllowed && !(await t.inGroup(ch.groups.can_add_subscribers_group!, me.userId))) {
      throw errors.insufficientPermission();
    }
    if (await maySubscribe(t, s, ch, me, others)) targetChannels.push(ch);
    else if (fatal) throw errors.unableToAccessChannel(ch.name);
    else unauthorized.push(ch.name);
  }

  const subscribed: Record<string, string[]> = {};
  const already: Record<string, string[]> = {};
  const added: { channelId: number; userId: number }[] = [];
  let from: number | undefined;
  for (const u of new Map(targets.map((u) => [u.userId, u])).values()) {
    for (const ch of targetChannels) {
      const key = String(u.userId);
      if (isSubscribed(s, ch, u.userId)) {
        (already[key] ??= []).push(ch.name);
        continue;
      }
      from ??= await spanBound(ctx, state.realmId);
      s = subscribeFact(s, facts, ch, u.userId, from);
      (subscribed[key] ??= []).push(ch.name);
      added.push({ channelId: ch.id, userId: u.userId });
    }
  }
  for (const ch of created) await recordChannelGroupSettings(ctx, t.realmId, ch.id, ch.groups);
  // New-subscription notices (FL 397; the request's opt-out, and none past
  // MAX_BULK_NEW_SUBSCRIPTION_MESSAGES users): the humans someone else
  // subscribed, to channels that existed before the request.
  const notify = args.send_new_subscription_messages !== false;
  const withinLimit = Object.keys(subscribed).length <= MAX_BULK_NEW_SUBSCRIPTION_MESSAGES;
  const notices = new Map<number, { user: RosterEntry; streamIds: number[] }>();
  const isNew = new Set(created.map((ch) => ch.id));
  for (const a of notify && withinLimit ? added : []) {
    const u = t.users.get(a.userId);
    // Archived channels get none: nobody is told to read a channel closed to messages.
    if (a.userId === me.userId || !u || u.isBot || isNew.has(a.channelId)) continue;
    if (s.channels[String(a.channelId)]?.isArchived) continue;
    (
      notices.get(a.userId) ?? notices.set(a.userId, { user: u, streamIds: [] }).get(a.userId)!
    ).streamIds.push(a.channelId);
  }
  const reply = {
    subscribed,
    already_subscribed: already,
    ...(fatal ? {} : { unauthorized }),
    ...(notify ? { new_subscription_messages_sent: withinLimit } : {}),
    // For PATCH /users/me/subscriptions (stripped from the HTTP reply).
    created: created.map((ch) => ({ id: ch.id, name: ch.name })),
  };
  // Answered once the queue shards know of the new subscriptions
  // (OutEvent.channel) and the bot's posts are made (bot-posts.ts).
  const events = subscriptionEvents(t, s, created, added);
  const posts = await botPostsHandoff(ctx, t.realmId, s, caller!, {
    me,
    created: reply.created,
    announce: args.announce === true,
    notices: [...notices.values()],
  });
  const handoffs = await accessChangeHandoffs(
    t,
    state,
    s,
    added.map((a) => a.channelId),
  );
  return {
    facts,
    events,
    handoffs: [...handoffs, ...posts],
    replyAfterEvents: true,
    ...(posts.length ? { replyAfterHandoffs: true } : {}),
    reply,
  };
};

// ---- unsubscribe (DELETE /users/me/subscriptions) ---------------------------

export const unsubscribe: DirHandler<"unsubscribe"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const names = args.subscriptions ?? [];
  const targets = resolvePrincipals(t, me, args.principals);
  // Zulip's user_directly_controls_user: oneself and one's own bots are not "others".
  const others = targets.some((u) => u.userId !== me.userId && !(u.isBot && u.botOwnerId === me.userId));
  const channels: Channel[] = [];
  for (const raw of names) {
    const id = state.byName[raw.trim().toLowerCase()];
    const ch = id === undefined ? undefined : state.channels[String(id)];
    if (!ch || !canSeeMetadata(state, ch, me, t)) throw errors.channelDoesNotExist(raw.trim());
    if (
      others &&
      !isAdmin(me.role) &&
      !(await t.inGroup(ch.groups.can_remove_subscribers_group!, me.userId))
    ) {
      throw errors.insufficientPermission();
    }
    if (!channels.includes(ch)) channels.push(ch);
  }
  const removed: string[] = [];
  const notRemoved: string[] = [];
  const facts: Obj[] = [];
  const gone: { ch: Channel; userId: number }[] = [];
  let to: number | undefined;
  for (const u of new Map(targets.map((u) => [u.userId, u])).values()) {
    for (const ch of channels) {
      if (!isSubscribed(state, ch, u.userId)) {
        notRemoved.push(ch.name);
        continue;
      }
      to ??= await spanBound(ctx, state.realmId);
      facts.push(fact({ type: "unsubscribed", channelId: ch.id, userId: u.userId, to }));
      removed.push(ch.name);
      gone.push({ ch, userId: u.userId });
    }
  }
  const s = after(state, facts);
  const events: OutEvent[] = [];
  const byUser = new Map<number, Channel[]>();
  const byChannel = new Map<number, number[]>();
  for (const g of gone) {
    (byUser.get(g.userId) ?? byUser.set(g.userId, []).get(g.userId)!).push(g.ch);
    (byChannel.get(g.ch.id) ?? byChannel.set(g.ch.id, []).get(g.ch.id)!).push(g.userId);
  }
  for (const [userId, chs] of byUser) {
    events.push({
      event: {
        type: "subscription",
        op: "remove",
        subscriptions: chs.map((c) => ({ stream_id: c.id, name: c.name })),
      },
      userIds: [userId],
    });
  }
  events.push(...peerChanges(t, s, byChannel, "peer_remove"));
  const handoffs = await accessChangeHandoffs(
    t,
    state,
    s,
    gone.map((g) => g.ch.id),
  );
  return { facts, events, handoffs, replyAfterEvents: true, reply: { removed, not_removed: notRemoved } };
};

// ---- reads ------------------------------------------------------------------

function subsOf(
  t: Turn,
  state: DirState,
  userId: number,
  active: boolean,
  withSubscribers: SubscriberMode,
  withArchived = false,
): Obj[] {
  const out: Obj[] = [];
  for (const ch of Object.values(state.channels)) {
    const sub = state.subs[String(ch.id)]?.[String(userId)];
    if (!sub || sub.active !== active) continue;
    if (ch.isArchived && !withArchived) continue;
    out.push(formatSub(state, ch, sub, t.sys, withSubscribers));
  }
  return out.sort((a, b) => String(a.name).localeCompare(String(b.name)));
}

const mySubscriptions: DirHandler<"mySubscriptions"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  return {
    reply: {
      subscriptions: subsOf(t, state, me.userId, true, subscriberMode(args.include_subscribers)),
    },
  };
};

/** GET /streams: the include_* filters (Zulip's get_streams_for_user). */
const listChannels: DirHandler<"listChannels"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const includeAll = args.include_all ?? false;
  if (includeAll && !isAdmin(me.role)) throw errors.mustBeAdmin();
  const includePublic = args.include_public ?? true;
  const includeWebPublic = args.include_web_public ?? false;
  const includeSubscribed = args.include_subscribed ?? true;
  const excludeArchived = args.exclude_archived ?? true;
  const includeDefault = args.include_default ?? false;
  const includeCanAccess = args.include_can_access_content ?? false;
  const out: Obj[] = [];
  for (const ch of Object.values(state.channels)) {
    if (excludeArchived && ch.isArchived) continue;
    let take = false;
    if (includeAll) take = true;
    if (includePublic && !ch.inviteOnly && !isGuest(me.role)) take = true;
    if (includeWebPublic && ch.isWebPublic) take = true;
    if (includeSubscribed && isSubscribed(state, ch, me.userId)) take = true;
    if (includeDefault && ch.isDefault) take = true;
    if (includeCanAccess && canAccessContent(state, ch, me)) take = true;
    if (take) out.push(formatChannel(state, ch, t.sys));
  }
  out.sort((a, b) => String(a.name).localeCompare(String(b.name)));
  return { reply: { streams: out } };
};

const getChannel: DirHandler<"getChannel"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const ch = channelById(state, args.stream_id);
  if (!canSeeMetadata(state, ch, me, t)) throw errors.invalidChannelId();
  return { reply: { stream: formatChannel(state, ch, t.sys) } };
};

const channelIdByName: DirHandler<"channelIdByName"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const name = args.stream;
  const id = state.byName[name.trim().toLowerCase()];
  const ch = id === undefined ? undefined : state.channels[String(id)];
  if (!ch || !canSeeMetadata(state, ch, me, t)) throw errors.invalidChannelName(name);
  return { reply: { stream_id: ch.id } };
};

const members: DirHandler<"members"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const ch = channelById(state, args.stream_id);
  if (!canAccessContent(state, ch, me) && !(ch.inviteOnly && isAdmin(me.role)))
    throw errors.invalidChannelId();
  return { reply: { subscribers: activeSubscriberIds(state, ch.id) } };
};

// ---- PATCH /streams/{id} and DELETE /streams/{id} ----------------------------

function streamUpdate(ch: Channel, property: string, value: Value, extra: Obj = {}): Obj {
  return { type: "stream", op: "update", stream_id: ch.id, name: ch.name, property, value, ...extra };
}

const PRIVACY_ARGS = new Set(["stream_id", "is_private", "is_web_public", "history_public_to_subscribers"]);

/** The update sets privacy and nothing else (group settings count only when sent). */
function onlyPrivacy(args: ArgsOf<ChannelDirectoryProtocol, "updateChannel">): boolean {
  const keys = Object.entries(args)
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k);
  if (Object.values(args.groups ?? {}).some((v) => v !== undefined)) return false;
  return (
    keys.some((k) => k !== "stream_id" && PRIVACY_ARGS.has(k)) &&
    keys.every((k) => k === "groups" || PRIVACY_ARGS.has(k))
  );
}

const updateChannel: DirHandler<"updateChannel"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const ch = channelById(state, args.stream_id);
  if (!canSeeMetadata(state, ch, me, t)) throw errors.invalidChannelId();
  if (!(await canAdminister(t, ch, me))) throw errors.cannotAdministerChannel();

  const changes: Obj = {};
  const events: { property: string; value: Value; extra?: Obj }[] = [];
  const unarchive = args.is_archived;
  if (unarchive === true) throw errors.badRequest("Invalid parameters");
  // An archived channel's privacy may change since FL 362; its other settings only once unarchived.
  if (ch.isArchived && unarchive !== false && !onlyPrivacy(args))
    throw errors.badRequest("Invalid channel ID");
  if (unarchive === false && ch.isArchived) {
    changes.isArchived = false;
    events.push({ property: "is_archived", value: false });
  }

  if (args.new_name !== undefined) {
    const name = checkChannelName(args.new_name);
    const holder = state.byName[name.toLowerCase()];
    if (holder !== undefined && holder !== ch.id) throw errors.channelAlreadyExists(name);
    if (name !== ch.name) {
      changes.name = name;
      events.push({ property: "name", value: name });
    }
  }
  if (args.description !== undefined) {
    const d = checkDescription(args.description);
    if (d !== ch.description) {
      changes.description = d;
      changes.renderedDescription = renderDescription(d);
      events.push({
        property: "description",
        value: d,
        extra: { rendered_description: changes.renderedDescription },
      });
    }
  }

  // Privacy: is_private, is_web_public, history_public_to_subscribers together.
  const isPrivate = args.is_private;
  const isWebPublic = args.is_web_public;
  const historyArg = args.history_public_to_subscribers;
  if (isPrivate !== undefined || isWebPublic !== undefined || historyArg !== undefined) {
    let inviteOnly = isPrivate ?? ch.inviteOnly;
    let webPublic = isWebPublic ?? ch.isWebPublic;
    if (isWebPublic === true) {
      const info = await ctx.call(realmRef(t.realmId), "publicInfo", {});
      if (info.webPublicAccessEnabled !== true) throw errors.webPublicDisabled();
      if (me.role !== 100) throw errors.insufficientPermission();
      inviteOnly = false;
    }
    if (isPrivate === true) webPublic = false;
    if (
      (isPrivate !== undefined || isWebPublic !== undefined) &&
      !isAdmin(me.role) &&
      !isSubscribed(state, ch, me.userId) &&
      ch.inviteOnly
    ) {
      throw errors.invalidChannelId();
    }
    let history = historyArg ?? (inviteOnly ? ch.historyPublic : true);
    if (!inviteOnly && historyArg === false) throw errors.badRequest("Invalid parameters");
    if (!inviteOnly) history = true;
    if (inviteOnly && ch.isDefault) throw errors.privateCannotBeDefault();
    if (inviteOnly !== ch.inviteOnly || webPublic !== ch.isWebPublic || history !== ch.historyPublic) {
      changes.inviteOnly = inviteOnly;
      changes.isWebPublic = webPublic;
      changes.historyPublic = history;
      events.push({
        property: "invite_only",
        value: inviteOnly,
        extra: { history_public_to_subscribers: history, is_web_public: webPublic },
      });
    }
  }

  const isDefault = args.is_default_stream;
  if (isDefault !== undefined) {
    if (!isAdmin(me.role)) throw errors.mustBeAdmin();
    if (isDefault && (changes.inviteOnly ?? ch.inviteOnly)) throw errors.privateCannotBeDefault();
    if (isDefault !== ch.isDefault) changes.isDefault = isDefault;
  }
  const dpn = args.default_push_notifications;
  if (dpn !== undefined) {
    if (!isAdmin(me.role)) throw errors.mustBeAdmin();
    if (dpn !== ch.defaultPushNotifications) {
      changes.defaultPushNotifications = dpn;
      events.push({ property: "default_push_notifications", value: dpn });
    }
  }
  if (args.message_retention_days !== undefined) {
    const days = checkRetention(args.message_retention_days);
    if (me.role !== 100) throw errors.mustBeOwner();
    if (days !== ch.retentionDays) {
      changes.retentionDays = days;
      events.push({ property: "message_retention_days", value: days });
    }
  }
  if (args.topics_policy !== undefined) {
    const policy = checkTopicsPolicy(args.topics_policy);
    await checkMaySetTopicsPolicy(t, me, policy);
    if (policy !== ch.topicsPolicy) {
      changes.topicsPolicy = policy;
      events.push({ property: "topics_policy", value: policy });
    }
  }
  if (args.folder_id !== undefined) {
    // null takes the channel out of its folder (FL 389).
    const folderId = args.folder_id === null ? null : folderById(state, args.folder_id).id;
    if (ch.folderId !== folderId) {
      changes.folderId = folderId;
      events.push({ property: "folder_id", value: folderId });
    }
  }
  const rawGroups = args.groups ?? {};
  const groups = { ...ch.groups };
  let groupsChanged = false;
  for (const name of GROUP_SETTINGS) {
    if (rawGroups[name] === undefined) continue;
    const v = await checkGroupSettingUpdate(ctx, t.realmId, rawGroups[name], ch.groups[name]!, name, {
      allowEveryone: !NO_EVERYONE.has(name),
    });
    if (JSON.stringify(v) !== JSON.stringify(ch.groups[name])) {
      groups[name] = v;
      groupsChanged = true;
      events.push({ property: name, value: v as Value });
    }
  }
  if (groupsChanged) {
    changes.groups = groups as unknown as Value;
    await recordChannelGroupSettings(ctx, t.realmId, ch.id, groups);
  }

  if (!Object.keys(changes).length) return { reply: {} };
  const facts = [fact({ type: "channelChanged", channelId: ch.id, changes })];
  const s = after(state, facts);
  const updated = s.channels[String(ch.id)]!;
  // Users who could see the channel before or after the change hear of it.
  const audience = [...new Set([...metadataAudience(t, state, ch), ...metadataAudience(t, s, updated)])];
  const out: OutEvent[] = [];
  if (changes.isArchived === undefined) out.push(...gainedAccessEvents(t, state, ch, s, updated));
  if (changes.isArchived === false) {
    out.push({
      event: {
        type: "stream",
        op: "create",
        streams: [formatChannel(s, updated, t.sys)],
        as_update: streamUpdate(ch, "is_archived", false),
      },
      userIds: audience,
    });
  }
  for (const e of events) {
    if (e.property === "is_archived") continue;
    // The event names the channel by its name before a rename.
    out.push({ event: streamUpdate(ch, e.property, e.value, e.extra), userIds: audience });
  }
  if (changes.isDefault !== undefined) out.push(defaultStreamsEvent(t, s));
  return { facts, events: out, reply: {} };
};

/** The realm's default channels after a change, to active non-guests (guests are never told them). */
export function defaultStreamsEvent(t: Turn, s: DirState): OutEvent {
  // Ids since FL 330 (channel objects before).
  const ids = Object.values(s.channels)
    .filter((c) => c.isDefault && !c.isArchived)
    .map((c) => c.id)
    .sort((a, b) => a - b);
  return {
    event: { type: "default_streams", default_streams: ids },
    userIds: t
      .activeUsers()
      .filter((u) => !isGuest(u.role))
      .map((u) => u.userId),
  };
}

const archiveChannel: DirHandler<"archiveChannel"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const ch = channelById(state, args.stream_id);
  if (!canSeeMetadata(state, ch, me, t) || ch.isArchived) throw errors.invalidChannelId();
  if (!(await canAdminister(t, ch, me))) throw errors.cannotAdministerChannel();
  const changes: Obj = { isArchived: true, isDefault: false };
  const facts = [fact({ type: "channelChanged", channelId: ch.id, changes })];
  // 10.2 tells clients with a delete event (the stream delete event, https://zulip.com/api/get-events).
  // Clients with the archived_channels capability get `as_update` instead (FL 378; actors/queue/shape.ts).
  const event: Obj = {
    type: "stream",
    op: "delete",
    stream_ids: [ch.id],
    streams: [{ stream_id: ch.id }],
    as_update: streamUpdate(ch, "is_archived", true),
  };
  return { facts, events: [{ event, userIds: metadataAudience(t, state, ch) }], reply: {} };
};

// ---- subscription properties -------------------------------------------------

const SUB_PROPERTIES: Record<string, keyof Sub> = {
  color: "color",
  is_muted: "isMuted",
  in_home_view: "isMuted",
  pin_to_top: "pinToTop",
  desktop_notifications: "desktopNotifications",
  audible_notifications: "audibleNotifications",
  push_notifications: "pushNotifications",
  email_notifications: "emailNotifications",
  wildcard_mentions_notify: "wildcardMentionsNotify",
};

/** PATCH /users/me/subscriptions/{id} and POST /users/me/subscriptions/properties: [{stream_id, property, value}]. */
const setSubProperties: DirHandler<"setSubProperties"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const data = args.data;
  let s = cloneDir(state);
  const facts: Obj[] = [];
  const events: OutEvent[] = [];
  for (const item of data) {
    const field = own(SUB_PROPERTIES, item.property);
    if (!field) throw errors.unknownSubscriptionProperty(item.property);
    const ch = s.channels[String(item.stream_id)];
    if (!ch || !canSeeMetadata(s, ch, me, t)) throw errors.invalidChannelId();
    const sub = s.subs[String(ch.id)]?.[String(me.userId)];
    if (!sub || !sub.active) throw errors.notSubscribed();
    let value: Value;
    if (item.property === "color") value = checkColor(item.value);
    else if (typeof item.value !== "boolean") throw errors.notBoolean("value");
    else value = item.value;
    const stored = item.property === "in_home_view" ? !value : value;
    const f = fact({ type: "subChanged", channelId: ch.id, userId: me.userId, changes: { [field]: stored } });
    facts.push(f);
    s = applyCopy(s, f);
    const ev = (property: string, v: Value): OutEvent => ({
      event: { type: "subscription", op: "update", stream_id: ch.id, property, value: v },
      userIds: [me.userId],
    });
    if (item.property === "is_muted" || item.property === "in_home_view") {
      // Since FL 139 both properties are announced (spec Events 4).
      events.push(ev("in_home_view", !stored), ev("is_muted", stored));
    } else {
      events.push(ev(item.property, value));
    }
  }
  return { facts, events, reply: {} };
};

// ---- /register ---------------------------------------------------------------

/** subscriptions, unsubscribed, never_subscribed and streams for POST /register. */
const registerState: DirHandler<"registerState"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId, state);
  const me = t.me(caller);
  const withSubscribers = subscriberMode(args.include_subscribers);
  // The archived_channels capability: archived channels stay in the
  // subscription lists (feature levels 315 and 362) and in `streams` (378),
  // marked is_archived; other clients see active channels only.
  const withArchived = args.archived_channels ?? false;
  const never: Obj[] = [];
  const streams: Obj[] = [];
  for (const ch of Object.values(state.channels)) {
    if (!canSeeMetadata(state, ch, me, t) || (ch.isArchived && !withArchived)) continue;
    streams.push(formatChannel(state, ch, t.sys));
    if (!state.subs[String(ch.id)]?.[String(me.userId)]) {
      const c = formatChannel(state, ch, t.sys);
      delete c.is_default;
      if (canAccessContent(state, ch, me)) Object.assign(c, subscriberFields(state, ch, withSubscribers));
      never.push(c);
    }
  }
  const byName = (a: Obj, b: Obj) => String(a.name).localeCompare(String(b.name));
  return {
    reply: {
      subscriptions: subsOf(t, state, me.userId, true, withSubscribers, withArchived),
      unsubscribed: subsOf(t, state, me.userId, false, withSubscribers, withArchived),
      never_subscribed: never.sort(byName),
      streams: streams.sort(byName),
    },
  };
};

/** Internal ({} -> {ids}): every channel's id, archived ones too (`manage migrate`). */
const allChannelIds: DirHandler<"allChannelIds"> = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  return { reply: { ids: Object.values(state.channels).map((ch) => ch.id) } };
};

// ---- leaf reads for conversation actors (no roster, no calls) ---------------

/**
 * What a channel's conversation actor needs to accept, show or change a
 * message: the channel's settings and current subscribers. The subscriber
 * lists are left out when the caller holds them already (`lists`, their
 * stamp): every send asks, and a large channel's lists were most of a
 * cluster send's cost when they crossed nodes (actors/channel/channel-info.ts).
 */
const sendContext: DirHandler<"sendContext"> = async (state, args, ctx) => {
  const ch = state.channels[String(args.stream_id)];
  if (!ch)
    throw args.forSend === true ? errors.channelIdDoesNotExist(args.stream_id) : errors.invalidChannelId();
  // The first send after an upgrade: subscriptions from before spans get
  // their cut before this message takes its id (see Channel.legacyCut).
  const facts =
    args.forSend === true && state.spansReady === false
      ? [fact({ type: "spansInit", cut: await spanBound(ctx, state.realmId) })]
      : undefined;
  const lists = subscriberListsOf(state, ch.id);
  // A private channel's content access through groups asks the group
  // directory, whose changes do not move this journal: such a reply, like
  // one with facts, is not a durable read's to reuse (Behavior.durableReads).
  const volatile = facts !== undefined || (args.userId !== undefined && asksGroups(state, ch, args.userId));
  return {
    ...(facts ? { facts } : {}),
    reply: {
      ...(volatile ? { volatile: true } : {}),
      ...(await accessOf(ctx, state, ch, args.userId)),
      is_archived: ch.isArchived,
      topics_policy: ch.topicsPolicy,
      recently_active: ch.isRecentlyActive ?? true,
      last_message_day: ch.lastMessageDay ?? null,
      groups: structuredClone(ch.groups),
      lists: lists.stamp,
      ...(args.lists === lists.stamp
        ? {}
        : {
            subscribers: lists.all as number[],
            // Who muted the channel: the sender's automatic topic policies (FL 214).
            muted_by: lists.muted as number[],
            // Who turned push notifications on for the channel (cluster/push-worker.ts).
            push_on: lists.pushOn as number[],
          }),
    },
  };
};

/**
 * Zulip's user_has_content_access beyond subscription and public access
 * (FL 354): a private channel's can_add_subscribers_group or
 * can_subscribe_group (guests never). Asked only for an unsubscribed user
 * of a private channel whose setting names someone, so subscribers and
 * public channels cost nothing.
 */
export async function contentAccessViaGroups(
  ctx: ActorContext,
  state: DirState,
  ch: Channel,
  userId: number | undefined,
): Promise<boolean> {
  if (userId === undefined || !asksGroups(state, ch, userId)) return false;
  for (const name of ["can_add_subscribers_group", "can_subscribe_group"]) {
    const v = ch.groups[name];
    if (v === undefined || v === NOBODY_GROUP) continue;
    if (typeof v !== "number" && !v.direct_members.length && !v.direct_subgroups.length) continue;
    if (await isUserInGroupSetting(ctx, state.realmId, v, userId, { allowEveryone: false })) return true;
  }
  return false;
}

/**
 * Whether contentAccessViaGroups may ask the group directory: an
 * unsubscribed user of a private channel that is not web-public.
 */
function asksGroups(state: DirState, ch: Channel, userId: number): boolean {
  return ch.inviteOnly && !ch.isWebPublic && !state.subs[String(ch.id)]?.[String(userId)]?.active;
}

/**
 * The channel's access settings as a send's and a read's context carry
 * them, with `content_access_user` when the user has content access
 * through the channel's groups only.
 */
export async function accessOf(ctx: ActorContext, state: DirState, ch: Channel, userId: number | undefined) {
  const viaGroups = userId !== undefined && (await contentAccessViaGroups(ctx, state, ch, userId));
  return {
    ...(viaGroups ? { content_access_user: userId } : {}),
    stream_id: ch.id,
    name: ch.name,
    invite_only: ch.inviteOnly,
    is_web_public: ch.isWebPublic,
    history_public_to_subscribers: ch.historyPublic,
  };
}

/** Channel ids by name (case-insensitive) for #**channel** links and `to`: {name: [id, name]}. */
const lookupNames: DirHandler<"lookupNames"> = (state, args) => {
  const out = dict<[number, string]>();
  for (const raw of args.names ?? []) {
    const id = state.byName[raw.trim().toLowerCase()];
    const ch = id === undefined ? undefined : state.channels[String(id)];
    if (ch && !ch.isArchived) out[raw.trim().toLowerCase()] = [ch.id, ch.name];
  }
  return { reply: out };
};

/** Every live channel name -> [id, name] (markdown channel links). */
const allNames: DirHandler<"allNames"> = (state) => {
  const out = dict<[number, string]>();
  for (const ch of Object.values(state.channels))
    if (!ch.isArchived) out[ch.name.toLowerCase()] = [ch.id, ch.name];
  return { reply: out };
};

/** A leaf access check for other actors: may this user read the channel's content? */
const contentAccess: DirHandler<"contentAccess"> = (state, args) => {
  const ch = state.channels[String(args.stream_id)];
  if (!ch || ch.isArchived) return { reply: { ok: false } };
  return { reply: { ok: canAccessContent(state, ch, args), name: ch.name } };
};

/**
 * A leaf read for the gateway's narrow planner, about the caller: channels
 * they muted (in:home), the public and web-public channels (channels:),
 * the channels whose history they may read without having received the
 * messages (historical rows, `with`): content access and public history;
 * their subscriptions (marking unread is limited to those); and the
 * archived channels (channels:archived).
 */
const narrowContext: DirHandler<"narrowContext"> = async (state, _args, ctx, caller) => {
  if (!caller) throw errors.accessDenied();
  const u = caller;
  const muted: number[] = [];
  const publicIds: number[] = [];
  const webPublic: number[] = [];
  const readable: number[] = [];
  const subscribed: number[] = [];
  const archived: number[] = [];
  const spans: Record<string, Span[]> = {};
  for (const ch of Object.values(state.channels)) {
    const sub = state.subs[String(ch.id)]?.[String(caller.userId)];
    if (sub?.active) subscribed.push(ch.id);
    const mine = sub ? spansOf(ch, sub) : [];
    if (mine.length) spans[String(ch.id)] = mine;
    if (sub?.active && sub.isMuted) muted.push(ch.id);
    if (ch.isArchived) {
      archived.push(ch.id);
      continue;
    }
    if (!ch.inviteOnly) publicIds.push(ch.id);
    if (ch.isWebPublic) webPublic.push(ch.id);
    if (!ch.inviteOnly || ch.historyPublic) {
      if (canAccessContent(state, ch, u) || (await contentAccessViaGroups(ctx, state, ch, u.userId)))
        readable.push(ch.id);
    }
  }
  return {
    reply: {
      muted,
      public: publicIds,
      webPublic,
      archived,
      readable,
      subscribed,
      spans,
    },
  };
};

/**
 * The channels each of `user_ids` is subscribed to: {"<user id>": [channel id]}.
 * Internal (not in `external`): the event router's index of which channels
 * the users with queues on a shard are subscribed to (cluster/event-router.ts).
 */
const subscribedChannels: DirHandler<"subscribedChannels"> = (state, args) => {
  const want = new Set(args.user_ids.map(String));
  const out = dict<number[]>();
  for (const uid of want) out[uid] = [];
  for (const [channelId, subs] of Object.entries(state.subs))
    for (const uid of want) if (subs[uid]?.active) out[uid]!.push(Number(channelId));
  return { reply: out };
};

export const directoryHandlers: DirHandlers<
  | "allChannelIds"
  | "createChannel"
  | "subscribe"
  | "unsubscribe"
  | "mySubscriptions"
  | "listChannels"
  | "getChannel"
  | "channelIdByName"
  | "members"
  | "updateChannel"
  | "archiveChannel"
  | "setSubProperties"
  | "registerState"
  | "sendContext"
  | "lookupNames"
  | "allNames"
  | "contentAccess"
  | "narrowContext"
  | "subscribedChannels"
> = {
  allChannelIds,
  createChannel,
  subscribe,
  unsubscribe,
  mySubscriptions,
  listChannels,
  getChannel,
  channelIdByName,
  members,
  updateChannel,
  archiveChannel,
  setSubProperties,
  registerState,
  sendContext,
  lookupNames,
  allNames,
  contentAccess,
  narrowContext,
  subscribedChannels,
};
