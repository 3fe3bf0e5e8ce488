// The narrow planner (Zulip's zerver/lib/narrow.py): a narrow's terms
// become a plan, and a plan plus a window around an anchor become the
// selected messages. GET /messages, POST /messages/flags/narrow, GET
// /messages/matches_narrow and the routes that find a message by id use it;
// the routes in gateway/routes/ only parse, call it and shape the reply.

import {
  EMPTY_TOPIC_NAME,
  LARGER_THAN_MAX_MESSAGE_ID,
  MAX_MESSAGES_PER_FETCH,
  channelConvRef,
  channelDirectoryRef,
  dmConvRef,
  realmRef,
  userRef,
  windowIds,
} from "../actors/index.ts";
import { own } from "../actors/dict.ts";
import { errors } from "../actors/errors.ts";
import type { Obj, Value } from "../actors/types.ts";
import { c, type Relayed, type RouteRequest } from "./index.ts";
import { channelRows, receivedFlags, spannedChannels } from "./received.ts";

function meId(req: RouteRequest): number {
  return req.caller!.userId;
}

/** Channel id from a name or an id. */
export async function channelIdOf(req: RouteRequest, v: string | number): Promise<number | null> {
  if (typeof v === "number") return v;
  const found = await req.call(channelDirectoryRef(req.realmId), "lookupNames", { names: [v] });
  const hit = own(found, v.trim().toLowerCase());
  return hit ? hit[0] : null;
}

// ---- narrows ---------------------------------------------------------------------
//
// Zulip's zerver/lib/narrow.py, split by where the data lives: terms about
// the conversation (channel, channels, dm, dm-including, group-pm-with,
// is:dm) and the user's own flags and topic policies are checked here on
// the caller's flag index; terms about the message itself (topic, sender,
// id, is:*, has, search, in:home inside one channel) travel as `Filters`
// to the conversation actors. One plan serves GET /messages and POST
// /messages/flags/narrow.

export interface Term {
  operator: string;
  operand: Value;
  negated: boolean;
}

export const narrowChecker = c.list((v: unknown, name: string): Term => {
  if (Array.isArray(v)) {
    if (v.length !== 2 || typeof v[0] !== "string") throw errors.invalid(name);
    return { operator: v[0], operand: v[1] as Value, negated: false };
  }
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (typeof o.operator !== "string" || !Object.hasOwn(o, "operand")) throw errors.invalid(name);
    return { operator: o.operator, operand: o.operand as Value, negated: o.negated === true };
  }
  throw errors.invalid(name);
});

/** Zulip's NarrowParameter operand validators (messages from zerver/lib/validator.py). */
const ID_OPERATORS = new Set([
  "near",
  "channel",
  "stream",
  "id",
  "sender",
  "group-pm-with",
  "group_pm_with",
  "dm-including",
  "with",
  "mentions",
]);
const IDS_OPERATORS = new Set(["dm", "pm-with", "pm_with"]);

function checkOperand(t: Term): void {
  const v = t.operand;
  if (ID_OPERATORS.has(t.operator)) {
    if (typeof v !== "string" && !(typeof v === "number" && Number.isInteger(v)))
      throw errors.badRequest("operand is not a string or integer");
  } else if (IDS_OPERATORS.has(t.operator)) {
    if (typeof v === "string") return;
    if (!Array.isArray(v)) throw errors.badRequest("operand is not a string or an integer list");
    v.forEach((x, i) => {
      if (typeof x !== "number" || !Number.isInteger(x))
        throw errors.badRequest(`operand[${i}] is not an integer`);
    });
  } else if (typeof v !== "string") {
    throw errors.badRequest("operand is not a string");
  } else if (t.operator === "search" && v.trim() === "") {
    throw errors.badRequest("operand cannot be blank.");
  }
}

const IS_FLAGS: Record<string, string> = {
  unread: "unread",
  starred: "starred",
  alerted: "has_alert_word",
};
const MENTION_FLAGS = [
  "mentioned",
  "stream_wildcard_mentioned",
  "topic_wildcard_mentioned",
  "group_mentioned",
];
const HAS_OPERANDS = ["attachment", "image", "link", "reaction"];
const CHANNEL_OPS = new Set(["channel", "stream"]);
const MAX_POSSIBLE_MESSAGE_ID = 2147483647;
const MUTED = 1;
const UNMUTED = 2;
const FOLLOWED = 3;
const RESOLVED_PREFIX = "\u2714 ";

export interface Item {
  id: number;
  conv: string;
  flags: string[];
  topic: string;
  sender: number;
  /** Found in a channel's public history, not in the caller's index. */
  located?: boolean;
}

/** The caller's muting state (in:home, is:followed, is:muted), fetched once per request. */
interface Muting {
  channels: Set<string>;
  /** "<channel id>:<lowercased topic>" -> visibility policy. */
  policies: Map<string, number>;
}

interface Plan {
  /** The one positive channel term, if any: the read goes to that channel. */
  channel: { id: number; operand: string } | null;
  /** Conversation-level predicates (conversation key -> keep?). */
  convPreds: ((conv: string) => boolean)[];
  /** Message-level terms. */
  filters: Filters;
  /** in:home / is:muted / is:followed, evaluated with `muting`. */
  home: { negated: boolean }[];
  followed: boolean[];
  resolved: boolean[];
  /** The channel whose topics alone count for in:home (Zulip's channel from the narrow). */
  homeChannel: number | null;
  /** channels:public positive and history allowed: unreceived public messages count. */
  publicHistory: boolean;
  includeHistory: boolean;
  muting: Muting | null;
  narrowCtx: NarrowContext | null;
  /** GET /messages' message_ids, as a set for the caller's index. */
  idSet?: Set<number>;
}

interface NarrowContext {
  muted: number[];
  public: number[];
  webPublic: number[];
  /** Archived channels (channels:archived, FL 489; absent from an older directory's reply). */
  archived?: number[];
  readable: number[];
  subscribed: number[];
}

interface Filters {
  topics: { value: string; negated: boolean }[];
  senders: { value: number; negated: boolean }[];
  ids: { value: number; negated: boolean }[];
  /** GET /messages' message_ids. */
  idIn?: number[];
  is: { flag: string; negated: boolean }[];
  has: { operand: string; negated: boolean }[];
  /** mentions: (FL 446) users the message personally and visibly mentions. */
  mentions: { value: number; negated: boolean }[];
  search?: string;
  home?: { negated: boolean; mutedTopics: string[] };
  noHistory?: boolean;
}

export async function narrowContext(req: RouteRequest): Promise<NarrowContext> {
  return await req.call(channelDirectoryRef(req.realmId), "narrowContext", {});
}

async function muting(req: RouteRequest, ctx: NarrowContext): Promise<Muting> {
  const r = await req.call(userRef(req.realmId, meId(req)), "userTopics", {});
  const policies = new Map<string, number>();
  for (const t of r.user_topics)
    policies.set(`${t.stream_id}:${t.topic_name.toLowerCase()}`, t.visibility_policy);
  return { channels: new Set(ctx.muted.map(String)), policies };
}

/** A user of the realm by id or email, deactivated ones included (as Zulip's narrows allow). */
async function userIdOf(req: RouteRequest, v: string | number): Promise<number | null> {
  try {
    const r = (await req.call(
      realmRef(req.realmId),
      "getMember",
      typeof v === "number" ? { userId: v } : { email: v.trim() },
    )) as { user: { user_id: number } };
    return r.user.user_id;
  } catch {
    return null;
  }
}

function dmParticipants(conv: string): number[] {
  return conv.slice(3).split(",").map(Number);
}

/**
 * `with`: replace the conversation terms by the conversation of the given
 * message (Zulip's update_narrow_terms_containing_with_operator).
 */
async function resolveWith(req: RouteRequest, terms: Term[]): Promise<Term[]> {
  const withTerms = terms.filter((t) => t.operator === "with");
  if (withTerms.length > 1) throw errors.badNarrowCombination("Duplicate 'with' operators.");
  if (!withTerms.length) return terms;
  const rest = terms.filter((t) => t.operator !== "with");
  const raw = String(withTerms[0]!.operand).trim();
  if (!/^[+-]?\d+$/.test(raw)) throw errors.badNarrow("Invalid 'with' operator");
  const found = await findMessages(req, [Number(raw)]);
  const target = found[0];
  if (!target) {
    const ops = rest.map((t) => t.operator);
    const defines =
      ops.some((o) => o === "dm" || o === "pm-with") ||
      (ops.some((o) => CHANNEL_OPS.has(o)) && ops.includes("topic"));
    if (defines) return rest;
    throw errors.badNarrow("Invalid 'with' operator");
  }
  const kept = rest.filter((t) => !["stream", "channel", "topic", "dm", "pm-with"].includes(t.operator));
  const conv: Term[] = target.conv.startsWith("dm:")
    ? [{ operator: "dm", operand: dmParticipants(target.conv), negated: false }]
    : [
        { operator: "channel", operand: Number(target.conv), negated: false },
        { operator: "topic", operand: target.topic, negated: false },
      ];
  return [...conv, ...kept];
}

export async function planNarrow(req: RouteRequest, rawTerms: Term[]): Promise<Plan> {
  for (const t of rawTerms) checkOperand(t);
  const terms = await resolveWith(req, rawTerms);
  const plan: Plan = {
    channel: null,
    convPreds: [],
    filters: { topics: [], senders: [], ids: [], is: [], has: [], mentions: [] },
    home: [],
    followed: [],
    resolved: [],
    homeChannel: null,
    publicHistory: false,
    includeHistory: false,
    muting: null,
    narrowCtx: null,
  };
  let isChannelNarrow = false;
  let isDmNarrow = false;
  const mark = (negated: boolean, kind: "channel" | "dm") => {
    if (negated) return;
    if (kind === "channel") isChannelNarrow = true;
    else isDmNarrow = true;
    if (isChannelNarrow && isDmNarrow)
      throw errors.badNarrow("No message can be both a channel message and direct message");
  };
  const userOf = (v: string | number) => userIdOf(req, v);
  const ctxOf = async () => (plan.narrowCtx ??= await narrowContext(req));
  const me = meId(req);
  const searches: string[] = [];
  for (const t of terms) {
    const neg = t.negated;
    const keep = (cond: (conv: string) => boolean) => plan.convPreds.push(neg ? (conv) => !cond(conv) : cond);
    switch (t.operator) {
      case "channel":
      case "stream": {
        mark(neg, "channel");
        const id = await channelIdOf(req, t.operand as string | number);
        if (id === null) throw errors.badNarrow(`unknown channel ${String(t.operand)}`);
        plan.homeChannel ??= id;
        if (!neg && plan.channel === null) plan.channel = { id, operand: String(t.operand) };
        else keep((conv) => conv === String(id));
        break;
      }
      case "channels":
      case "streams": {
        mark(neg, "channel");
        const ctx = await ctxOf();
        let set: Set<string>;
        if (t.operand === "public") set = new Set(ctx.public.map(String));
        else if (t.operand === "web-public") set = new Set(ctx.webPublic.map(String));
        else if (t.operand === "archived") set = new Set((ctx.archived ?? []).map(String));
        else throw errors.badNarrow(`unknown channels operand ${String(t.operand)}`);
        if (t.operand === "public" && !neg && req.caller!.role < 600) plan.publicHistory = true;
        keep((conv) => set.has(conv));
        break;
      }
      case "topic": {
        mark(neg, "channel");
        let value = String(t.operand).trim();
        if (value === EMPTY_TOPIC_NAME) value = "";
        plan.filters.topics.push({ value, negated: neg });
        break;
      }
      case "sender": {
        const id = await userOf(t.operand as string | number);
        if (id === null) throw errors.badNarrow(`unknown user ${String(t.operand)}`);
        plan.filters.senders.push({ value: id, negated: neg });
        break;
      }
      case "mentions": {
        // FL 446: a direct, non-silent mention of the user in the current content.
        const id = await userOf(t.operand as string | number);
        if (id === null) throw errors.badNarrow(`unknown user ${String(t.operand)}`);
        plan.filters.mentions.push({ value: id, negated: neg });
        break;
      }
      case "dm":
      case "pm-with":
      case "pm_with": {
        mark(neg, "dm");
        const v = t.operand;
        const ids: number[] = [];
        const parts = typeof v === "string" ? v.split(",").map((s) => s.trim()) : (v as number[]);
        // One lookup per distinct participant: the operand's length is the client's.
        for (const part of new Set<string | number>(parts)) {
          const id = await userOf(part);
          if (id === null) throw errors.badNarrow(`unknown user in ${String(v)}`);
          ids.push(id);
        }
        if (!ids.length) {
          keep(() => false);
          break;
        }
        const key = "dm:" + [...new Set([...ids, me])].sort((a, b) => a - b).join(",");
        keep((conv) => conv === key);
        break;
      }
      case "dm-including": {
        mark(neg, "dm");
        const id = await userOf(t.operand as string | number);
        if (id === null) throw errors.badNarrow(`unknown user ${String(t.operand)}`);
        keep((conv) => conv.startsWith("dm:") && dmParticipants(conv).includes(id));
        break;
      }
      case "group-pm-with":
      case "group_pm_with": {
        mark(neg, "dm");
        const id = await userOf(t.operand as string | number);
        if (id === null) throw errors.badNarrow(`unknown user ${String(t.operand)}`);
        keep((conv) => {
          if (!conv.startsWith("dm:")) return false;
          const ids = dmParticipants(conv);
          return ids.length > 2 && ids.includes(id);
        });
        break;
      }
      case "is": {
        const v = String(t.operand);
        if (v === "dm" || v === "private") {
          mark(false, neg ? "channel" : "dm");
          keep((conv) => conv.startsWith("dm:"));
        } else if (own(IS_FLAGS, v)) plan.filters.is.push({ flag: IS_FLAGS[v]!, negated: neg });
        else if (v === "mentioned") plan.filters.is.push({ flag: "mentioned*", negated: neg });
        else if (v === "followed") plan.followed.push(neg);
        else if (v === "resolved") plan.resolved.push(neg);
        else if (v === "muted") plan.home.push({ negated: !neg });
        else throw errors.badNarrow(`unknown 'is' operand ${v}`);
        break;
      }
      case "has": {
        const v = String(t.operand);
        if (!HAS_OPERANDS.includes(v)) throw errors.badNarrow(`unknown 'has' operand ${v}`);
        plan.filters.has.push({ operand: v, negated: neg });
        break;
      }
      case "in": {
        if (t.operand === "home") plan.home.push({ negated: neg });
        else if (t.operand !== "all") throw errors.badNarrow(`unknown 'in' operand ${String(t.operand)}`);
        break;
      }
      case "id": {
        const raw = String(t.operand);
        if (!/^\d+$/.test(raw) || Number(raw) > MAX_POSSIBLE_MESSAGE_ID)
          throw errors.badNarrow("Invalid message ID");
        plan.filters.ids.push({ value: Number(raw), negated: neg });
        break;
      }
      case "near":
        break;
      case "search":
        // push, not a copy per term: a narrow may hold any number of terms.
        searches.push(String(t.operand));
        break;
      default:
        throw errors.badNarrow(`unknown operator ${t.operator}`);
    }
  }
  if (searches.length) plan.filters.search = searches.join(" ").trim();
  // Zulip's ok_to_include_history: a positive channel term (access is
  // checked by the channel) or channels:public; never with an is: term.
  const hasIs = terms.some((t) => t.operator === "is" && t.operand !== "resolved");
  plan.includeHistory = (plan.channel !== null || plan.publicHistory) && !hasIs;
  if (!plan.includeHistory) plan.publicHistory = false;
  if (plan.home.length || plan.followed.length) plan.muting = await muting(req, await ctxOf());
  return plan;
}

/** Whether an item of the caller's index passes the narrow (all but has/search). */
function itemMatches(plan: Plan, i: Item): boolean {
  if (plan.channel && i.conv !== String(plan.channel.id)) return false;
  if (!plan.convPreds.every((p) => p(i.conv))) return false;
  const f = plan.filters;
  const idSet = plan.idSet;
  for (const t of f.topics) {
    if (i.conv.startsWith("dm:")) {
      if (!t.negated) return false;
      continue;
    }
    if ((i.topic.toLowerCase() === t.value.toLowerCase()) === t.negated) return false;
  }
  for (const t of f.senders) if ((i.sender === t.value) === t.negated) return false;
  for (const t of f.ids) if ((i.id === t.value) === t.negated) return false;
  if (idSet && !idSet.has(i.id)) return false;
  for (const t of f.is) {
    const has =
      t.flag === "unread"
        ? !i.flags.includes("read")
        : t.flag === "mentioned*"
          ? MENTION_FLAGS.some((x) => i.flags.includes(x))
          : i.flags.includes(t.flag);
    if (has === t.negated) return false;
  }
  const isDm = i.conv.startsWith("dm:");
  for (const neg of plan.resolved) if ((!isDm && i.topic.startsWith(RESOLVED_PREFIX)) === neg) return false;
  if (plan.muting) {
    const policy = isDm ? 0 : (plan.muting.policies.get(`${i.conv}:${i.topic.toLowerCase()}`) ?? 0);
    for (const neg of plan.followed) if ((policy === FOLLOWED) === neg) return false;
    for (const h of plan.home) if (isMuted(plan, i.conv, policy) !== h.negated) return false;
  }
  return true;
}

/** Zulip's exclude_stream_and_topic_mutes for one message. */
function isMuted(plan: Plan, conv: string, policy: number): boolean {
  if (conv.startsWith("dm:")) return false;
  if (plan.homeChannel !== null) return policy === MUTED && conv === String(plan.homeChannel);
  if (policy === MUTED) return true;
  return plan.muting!.channels.has(conv) && policy !== UNMUTED && policy !== FOLLOWED;
}

/** The message-level filters a conversation actor evaluates for a channel-bound read. */
function channelFilters(plan: Plan, channelId: number): Filters {
  const f: Filters = { ...plan.filters, is: [...plan.filters.is] };
  f.is = f.is.map((t) => (t.flag === "mentioned*" ? { ...t, flag: "mentioned" } : t));
  if (plan.home.length && plan.muting) {
    const prefix = `${channelId}:`;
    const mutedTopics = [...plan.muting.policies]
      .filter(([k, v]) => k.startsWith(prefix) && v === MUTED)
      .map(([k]) => k.slice(prefix.length));
    // Several in: terms are rare; the last one decides, as they all test the same thing.
    f.home = { negated: plan.home[plan.home.length - 1]!.negated, mutedTopics };
  }
  if (!plan.includeHistory) f.noHistory = true;
  return f;
}

/** Whether a channel-bound read can be answered by the channel alone. */
function channelBound(plan: Plan): boolean {
  if (!plan.channel) return false;
  const conv = String(plan.channel.id);
  if (!plan.convPreds.every((p) => p(conv))) return false;
  return (
    !plan.followed.length &&
    !plan.resolved.length &&
    !plan.filters.is.some((t) => t.flag === "mentioned*") &&
    plan.home.length <= 1
  );
}

/** Candidates from the caller's flag index, filtered by everything but has/search. */
export async function indexCandidates(req: RouteRequest, plan: Plan | null, ids?: number[]): Promise<Item[]> {
  const [r, spanned] = await Promise.all([
    req.call(userRef(req.realmId, meId(req)), "selectMessages", { ids }),
    plan && !receivedRowsMatter(plan) ? Promise.resolve([]) : spannedChannels(req),
  ]);
  const items: Item[] = r.items.map(([id, conv, flags, topic, sender]) => ({
    id,
    conv,
    flags,
    topic,
    sender,
  }));
  // The caller's received rows (gateway/received.ts) of the channels the narrow can match.
  const convs = plan
    ? spanned.filter(
        (conv) => (!plan.channel || conv === String(plan.channel.id)) && plan.convPreds.every((p) => p(conv)),
      )
    : spanned;
  if (convs.length) {
    const rt = r.readThrough;
    const unreadOnly = plan?.filters.is.some((t) => t.flag === "unread" && !t.negated) ?? false;
    const parts = await channelRows(req, convs, (conv) => ({
      ...(ids ? { ids } : {}),
      ...(unreadOnly ? { after: rt[conv] ?? 0 } : {}),
    }));
    const have = new Set(items.map((i) => i.id));
    for (const part of parts)
      for (const [id, conv, topic, sender] of part.rows)
        if (!have.has(id)) items.push({ id, conv, flags: receivedFlags(rt, conv, id), topic, sender });
    items.sort((a, b) => a.id - b.id);
  }
  return plan ? items.filter((i) => itemMatches(plan, i)) : items;
}

/** Whether a narrow can match a received row (one with no flag but, maybe, read). */
function receivedRowsMatter(plan: Plan): boolean {
  return !plan.filters.is.some((t) => !t.negated && t.flag !== "unread" && t.flag !== "read");
}

/**
 * Messages by id the caller may see: their own (flag index), then those in
 * channels whose history they may read (Zulip's access_message), the latter
 * with the flags of a historical row.
 */
export async function findMessages(req: RouteRequest, ids: number[]): Promise<Item[]> {
  const own = await indexCandidates(req, null, ids);
  const missing = ids.filter((id) => !own.some((i) => i.id === id));
  if (!missing.length) return own;
  const ctx = await narrowContext(req);
  const found = await Promise.all(
    ctx.readable.map(async (channelId) => {
      const r = await req.call(channelConvRef(req.realmId, channelId), "locateIds", { ids: missing });
      return r.items.map(([id, topic, sender]) => ({
        id,
        conv: String(channelId),
        flags: ["read", "historical"],
        topic,
        sender,
        located: true,
      }));
    }),
  );
  return [...own, ...found.flat()].sort((a, b) => a.id - b.id);
}

export function byConv(items: Item[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const i of items) (out.get(i.conv) ?? out.set(i.conv, []).get(i.conv)!).push(i.id);
  return out;
}

export function convRef(req: RouteRequest, conv: string) {
  return conv.startsWith("dm:")
    ? dmConvRef(req.realmId, dmParticipants(conv))
    : channelConvRef(req.realmId, Number(conv));
}

/** has / search: decided by the conversations holding the messages. */
async function contentFilter(req: RouteRequest, items: Item[], plan: Plan): Promise<Item[]> {
  const f = plan.filters;
  if (!f.has.length && !f.mentions.length && f.search === undefined) return items;
  const filters = {
    has: f.has,
    mentions: f.mentions,
    ...(f.search !== undefined ? { search: f.search } : {}),
  };
  const keep = new Set<number>();
  await Promise.all(
    [...byConv(items)].map(async ([conv, ids]) => {
      const r = await req.call(convRef(req, conv), "getByIds", { ids, filters, matchOnly: true });
      if ("matching" in r) for (const id of r.matching) keep.add(id);
    }),
  );
  return items.filter((i) => keep.has(i.id));
}

export async function loadMessages(
  req: RouteRequest,
  items: Item[],
  opts: ClientOpts,
  search?: string,
): Promise<Obj[]> {
  const found = new Map<number, Obj>();
  await Promise.all(
    [...byConv(items)].map(async ([conv, ids]) => {
      const r = await req.call(convRef(req, conv), "getByIds", {
        ids,
        ...opts,
        ...(search ? { search } : {}),
      });
      if ("messages" in r) for (const [id, m] of Object.entries(r.messages)) found.set(Number(id), m);
    }),
  );
  const out: Obj[] = [];
  for (const i of items) {
    const m = found.get(i.id);
    if (m) out.push({ ...m, flags: i.flags });
  }
  return out;
}

/** anchor: "newest" | "oldest" | "first_unread" | an id (negative -> 0). */
export function parseAnchor(raw: string | undefined, useFirstUnread: boolean): number | "first_unread" {
  if (useFirstUnread) return "first_unread";
  if (raw === undefined) throw errors.missingAnchor();
  if (raw === "newest") return LARGER_THAN_MAX_MESSAGE_ID;
  if (raw === "oldest") return 0;
  if (raw === "first_unread") return "first_unread";
  if (!/^-?\d+$/.test(raw)) throw errors.invalidAnchor();
  return Math.min(Math.max(0, Number(raw)), LARGER_THAN_MAX_MESSAGE_ID);
}

/** How the client wants messages shaped (GET /messages' options). */
export interface ClientOpts {
  apply_markdown: boolean;
  client_gravatar: boolean;
  allow_empty_topic_name: boolean;
}

export type Selection = {
  anchor: number;
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  history_limited: boolean;
  messages: Obj[];
};

interface Window {
  anchor: number | "first_unread";
  numBefore: number;
  numAfter: number;
  includeAnchor: boolean;
}

function channelFetchArgs(plan: Plan, channelId: number, operand: string, w: Window, opts: ClientOpts) {
  return {
    anchor: w.anchor,
    num_before: w.numBefore,
    num_after: w.numAfter,
    include_anchor: w.includeAnchor,
    filters: channelFilters(plan, channelId),
    operand,
    ...opts,
  };
}

async function channelFetch(
  req: RouteRequest,
  plan: Plan,
  channelId: number,
  operand: string,
  w: Window,
  opts: ClientOpts,
): Promise<Selection> {
  const args = channelFetchArgs(plan, channelId, operand, w, opts);
  return await req.call(channelConvRef(req.realmId, channelId), "fetch", args);
}

/**
 * `select` for a route that answers the selection unchanged (GET
 * /messages): a narrow bound to one channel is that channel's reply,
 * relayed without being parsed.
 */
export async function selectRelayed(
  req: RouteRequest,
  terms: Term[],
  w: Window,
  opts: ClientOpts,
): Promise<Selection | Relayed<Selection>> {
  const plan = await planNarrow(req, terms);
  if (!channelBound(plan)) return selectPlanned(req, plan, w, opts);
  const { id, operand } = plan.channel!;
  return await req.relay(
    channelConvRef(req.realmId, id),
    "fetch",
    channelFetchArgs(plan, id, operand, w, opts),
  );
}

/** The messages of a narrow around an anchor (Zulip's fetch_messages). */
export async function select(
  req: RouteRequest,
  terms: Term[],
  w: Window,
  opts: ClientOpts,
  messageIds?: number[],
): Promise<Selection> {
  const plan = await planNarrow(req, terms);
  if (messageIds) {
    plan.filters.idIn = messageIds;
    plan.idSet = new Set(messageIds);
  }
  return selectPlanned(req, plan, w, opts);
}

async function selectPlanned(req: RouteRequest, plan: Plan, w: Window, opts: ClientOpts): Promise<Selection> {
  if (channelBound(plan)) return channelFetch(req, plan, plan.channel!.id, plan.channel!.operand, w, opts);
  let items = await contentFilter(req, await indexCandidates(req, plan), plan);
  const anchor =
    w.anchor === "first_unread"
      ? (items.find((i) => !i.flags.includes("read"))?.id ?? LARGER_THAN_MAX_MESSAGE_ID)
      : w.anchor;
  const win = { anchor, numBefore: w.numBefore, numAfter: w.numAfter, includeAnchor: w.includeAnchor };
  if (plan.publicHistory) return publicHistorySelect(req, plan, win, opts);
  const chosen = windowIds(
    items.map((i) => i.id),
    win,
  );
  const pick = new Set(chosen.ids);
  items = items.filter((i) => pick.has(i.id));
  return {
    anchor,
    found_anchor: chosen.found_anchor,
    found_oldest: chosen.found_oldest,
    found_newest: chosen.found_newest,
    history_limited: false,
    messages: await loadMessages(req, items, opts, plan.filters.search),
  };
}

/**
 * channels:public with history: every public channel's window (each
 * channel answers with the caller's flags, historical for unreceived
 * messages), merged and cut again. Each channel returns up to numBefore /
 * numAfter around the anchor, so the merged window is exact, and its
 * found_oldest / found_newest are those of the merged list.
 */
async function publicHistorySelect(
  req: RouteRequest,
  plan: Plan,
  w: { anchor: number; numBefore: number; numAfter: number; includeAnchor: boolean },
  opts: ClientOpts,
): Promise<Selection> {
  const channels = plan.narrowCtx!.public.filter((id) => plan.convPreds.every((p) => p(String(id))));
  const parts = await Promise.all(
    channels.map((id) =>
      channelFetch(req, plan, id, String(id), w, opts).catch((e: unknown) => {
        // A public channel the caller cannot read adds nothing.
        if ((e as { code?: string }).code === "BAD_NARROW") return null;
        throw e;
      }),
    ),
  );
  const byId = new Map<number, Obj>();
  for (const part of parts) for (const m of part?.messages ?? []) byId.set(m.id as number, m);
  const win = windowIds(
    [...byId.keys()].sort((a, b) => a - b),
    w,
  );
  return {
    anchor: w.anchor,
    found_anchor: win.found_anchor,
    found_oldest: win.found_oldest,
    found_newest: win.found_newest,
    history_limited: false,
    messages: win.ids.map((id) => byId.get(id)!),
  };
}

/**
 * GET /messages with message_ids: those of the listed messages that match
 * the narrow and the caller may read, with no anchor and found_* false
 * (Zulip's get_messages_backend). An anchor or a window is refused.
 */
export async function byMessageIds(req: RouteRequest, ids: number[]): Promise<Obj> {
  const pr = req.params;
  if (
    (pr.num_before as number) > 0 ||
    (pr.num_after as number) > 0 ||
    pr.anchor !== undefined ||
    pr.use_first_unread_anchor === true
  )
    throw errors.unsupportedCombination([
      "num_before",
      "num_after",
      "anchor",
      "message_ids",
      "include_anchor",
      "use_first_unread_anchor",
    ]);
  if (ids.length > MAX_MESSAGES_PER_FETCH) throw errors.tooManyMessages();
  const opts: ClientOpts = {
    apply_markdown: pr.apply_markdown as boolean,
    client_gravatar: pr.client_gravatar as boolean,
    allow_empty_topic_name: pr.allow_empty_topic_name as boolean,
  };
  const unique = [...new Set(ids)].sort((a, b) => a - b);
  let s: Selection | null = null;
  if (unique.length) {
    // Only the listed ids pass the filters, so a window from the first of
    // them as long as the list holds every match.
    const w = { anchor: unique[0]!, numBefore: 0, numAfter: unique.length, includeAnchor: true };
    s = await select(req, pr.narrow as Term[], w, opts, unique);
  }
  return {
    messages: (s?.messages ?? []) as unknown as Value,
    history_limited: s?.history_limited ?? false,
    found_anchor: false,
    found_oldest: false,
    found_newest: false,
  };
}

export async function locate(req: RouteRequest, id: number): Promise<Item> {
  const items = await findMessages(req, [id]);
  if (!items.length) throw errors.invalidMessages();
  return items[0]!;
}
