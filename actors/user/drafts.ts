// Synchronized message drafts (Zulip's zerver/lib/drafts.py): each user's
// own list, on their user actor; events go to the user's own queues only.
//
// The gateway checks each draft's shape (types, the literal `type`, the
// stripped non-blank content); this file does the rest in Zulip's order,
// draft after draft: the content (normalize_body), the timestamp, then the
// recipient (a channel the user can read, or users of the realm).
//
// Handlers here call the channel directory's contentAccess and the realm's
// rosterEntries, both leaves, so they are not leaves themselves.
//
// SNAPSHOT NOTE: the state lives in `UserState.drafts`; `initialUser`
// supplies [] to snapshots written before it.

import { channelDirectoryRef } from "../addresses.ts";
import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { ActorContext, Caller, Obj } from "../types.ts";
import { dmRecipients, type RecipientCache } from "./dm-recipients.ts";
import { settingValue } from "./format.ts";
import type { DraftIn, UserProtocol } from "./protocol.ts";
import type { Draft, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<
  UserState,
  UserProtocol,
  "drafts" | "draftsState" | "createDrafts" | "editDraft" | "deleteDraft"
>;

/** settings.MAX_MESSAGE_LENGTH and MAX_TOPIC_NAME_LENGTH. */
const CONTENT_MAX = 10000;
const TOPIC_MAX = 60;
/** settings.MAX_DRAFTS_IN_REGISTER_RESPONSE. */
export const REGISTER_MAX = 1000;
/**
 * Zulip keeps any number of drafts; an actor's state must stay bounded.
 * The register cap is also the hold cap, so /register always shows all.
 */
export const DRAFTS_MAX = 1000;
/** 9999-12-31T23:59:59Z: Python's datetime ends there (Zulip answers 500 past it). */
const TIMESTAMP_MAX = 253402300799;

type DraftFact = { type: "draftsSaved"; drafts: Draft[] } | { type: "draftRemoved"; id: number };

/**
 * Fold the draft facts. Turning enable_drafts_synchronization off deletes
 * the synced drafts (Zulip's do_change_user_setting), without events: the
 * `settings` fact that carries the change is the deletion.
 */
export function applyDraftFact(state: UserState, raw: Obj): UserState {
  if (raw.type === "settings") {
    const values = raw.values as Obj | undefined;
    if (values && values.enable_drafts_synchronization === false) state.drafts = [];
    return state;
  }
  const fact = raw as unknown as DraftFact;
  switch (fact.type) {
    case "draftsSaved": {
      const at = new Map(state.drafts.map((x, i) => [x.id, i]));
      for (const d of fact.drafts) {
        const i = at.get(d.id);
        if (i !== undefined) state.drafts[i] = { ...d, to: [...d.to] };
        else at.set(d.id, state.drafts.push({ ...d, to: [...d.to] }) - 1);
      }
      break;
    }
    case "draftRemoved":
      state.drafts = state.drafts.filter((x) => x.id !== fact.id);
      break;
    default:
      break;
  }
  return state;
}

function requireSelf(state: UserState, caller: Caller | null): Caller {
  if (!state.created || !caller || caller.userId !== state.userId || caller.realmId !== state.realmId) {
    throw errors.accessDenied();
  }
  return caller;
}

/** Zulip's draft_endpoint: every drafts endpoint refuses while the setting is off. */
function requireSync(state: UserState, caller: Caller | null): Caller {
  const c = requireSelf(state, caller);
  if (settingValue(state, "enable_drafts_synchronization") === false) throw errors.draftsSyncDisabled();
  return c;
}

function format(d: Draft): Obj {
  return {
    id: d.id,
    type: d.type,
    to: [...d.to],
    topic: d.topic,
    content: d.content,
    timestamp: Math.trunc(d.timestamp),
  };
}

function find(state: UserState, id: number): Draft {
  const d = state.drafts.find((x) => x.id === id);
  if (!d) throw errors.draftNotFound();
  return d;
}

/** Python's truncate_content, counting code points. */
function truncate(s: string, max: number, suffix: string): string {
  if (s.length <= max) return s;
  const cps = [...s];
  if (cps.length <= max) return s;
  return cps.slice(0, max - suffix.length).join("") + suffix;
}

/** Zulip's normalize_body. */
function normalizeBody(raw: string): string {
  let body = raw.replace(/\s+$/, "");
  let start = 0;
  while (start < body.length && body.charCodeAt(start) === 10) start++;
  body = body.slice(start);
  if (body.length === 0) throw errors.messageEmpty();
  if (body.includes("\0")) throw errors.messageNullBytes();
  return truncate(body, CONTENT_MAX, "\n[message truncated]");
}

/**
 * Per request: the recipients already looked up, and the channels already
 * checked.
 */
interface RequestCache {
  users: RecipientCache;
  channels: Map<number, boolean>;
}

function newCache(): RequestCache {
  return { users: new Map(), channels: new Map() };
}

/** Zulip's further_validated_draft_dict: the stored draft (id to be set by the caller). */
async function validate(
  state: UserState,
  d: DraftIn,
  ctx: ActorContext,
  caller: Caller,
  cache: RequestCache,
): Promise<Omit<Draft, "id">> {
  const content = normalizeBody(d.content);
  let timestamp = d.timestamp ?? ctx.now() / 1000;
  timestamp = Math.round(timestamp * 1e6) / 1e6;
  if (timestamp < 0) throw errors.timestampNegative();
  if (!(timestamp <= TIMESTAMP_MAX)) throw errors.invalid("timestamp");

  if (d.type === "stream") {
    const topic = truncate(d.topic, TOPIC_MAX, "...");
    if (topic.includes("\0")) throw errors.topicNullBytes();
    if (d.to.length !== 1) throw errors.exactlyOneChannel();
    const streamId = d.to[0]!;
    let ok = cache.channels.get(streamId);
    if (ok === undefined) {
      const r = await ctx.call(channelDirectoryRef(state.realmId), "contentAccess", {
        stream_id: streamId,
        userId: caller.userId,
        role: caller.role,
      });
      ok = r.ok;
      cache.channels.set(streamId, ok);
    }
    if (!ok) throw errors.invalidChannelId();
    return { type: "stream", to: [d.to[0]!], topic, content, timestamp };
  }
  if (d.type === "private" && d.to.length > 0) {
    const to = await dmRecipients(ctx, state, d.to, cache.users);
    return { type: "private", to, topic: "", content, timestamp };
  }
  return { type: "", to: [], topic: "", content, timestamp };
}

/** GET /drafts: oldest edit first (Zulip orders by last_edit_time). */
const drafts: Handlers["drafts"] = (state, _args, _ctx, caller) => {
  requireSync(state, caller);
  const list = [...state.drafts].sort((a, b) => a.timestamp - b.timestamp || a.id - b.id);
  return { reply: { count: list.length, drafts: list.map(format) } };
};

/** /register's `drafts`: newest edit first, at most REGISTER_MAX. */
const draftsState: Handlers["draftsState"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  const list = [...state.drafts].sort((a, b) => b.timestamp - a.timestamp || b.id - a.id);
  return { reply: { drafts: list.slice(0, REGISTER_MAX).map(format) } };
};

const createDrafts: Handlers["createDrafts"] = async (state, args, ctx, caller) => {
  const c = requireSync(state, caller);
  // Before the checks, which may ask other actors for each draft.
  if (state.drafts.length + args.drafts.length > DRAFTS_MAX) throw errors.tooManyDrafts(DRAFTS_MAX);
  const cache = newCache();
  const valid: Omit<Draft, "id">[] = [];
  for (const d of args.drafts) valid.push(await validate(state, d, ctx, c, cache));
  const created: Draft[] = [];
  for (const v of valid) created.push({ id: await ctx.nextId(`draft.${state.realmId}`), ...v });
  return {
    facts: created.length ? [{ type: "draftsSaved", drafts: created as unknown as Obj[] }] : [],
    events: [
      {
        event: { type: "drafts", op: "add", drafts: created.map(format) },
        userIds: [state.userId],
      },
    ],
    reply: { ids: created.map((d) => d.id) },
  };
};

const editDraft: Handlers["editDraft"] = async (state, args, ctx, caller) => {
  const c = requireSync(state, caller);
  const old = find(state, args.id);
  const v = await validate(state, args.draft, ctx, c, newCache());
  const draft: Draft = { id: old.id, ...v };
  return {
    facts: [{ type: "draftsSaved", drafts: [draft as unknown as Obj] }],
    events: [{ event: { type: "drafts", op: "update", draft: format(draft) }, userIds: [state.userId] }],
    reply: {},
  };
};

const deleteDraft: Handlers["deleteDraft"] = (state, args, _ctx, caller) => {
  requireSync(state, caller);
  const old = find(state, args.id);
  return {
    facts: [{ type: "draftRemoved", id: old.id }],
    events: [{ event: { type: "drafts", op: "remove", draft_id: old.id }, userIds: [state.userId] }],
    reply: {},
  };
};

export const draftHandlers: Handlers = {
  drafts,
  draftsState,
  createDrafts,
  editDraft,
  deleteDraft,
};
