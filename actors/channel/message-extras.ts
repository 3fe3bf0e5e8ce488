// Reads about single messages (Zulip's zerver/views/message_edit.py
// get_message_edit_history, read_receipts.py, message_fetch.py
// messages_in_narrow_backend) on the conversation holding them. The
// preview renderer is the directory's (channel-directory/message-extras.ts).
//
// Calls go one way, as in conversation-handlers.ts: to the channel directory
// (`sendContext`), the realm (`roster`, `registerRealmState`) and user actors
// (`messageFlags`, `readReceipt`): all leaves.

import { inSpans } from "../spans.ts";
import { errors } from "../errors.ts";
import type { ActorContext, Caller, Obj, Value } from "../types.ts";
import { userRef } from "../user/index.ts";
import { isDmKey, realmRef } from "../addresses.ts";
import { historyProtected, roster } from "../channel-directory/index.ts";
import { accessibleIds, channelSpans } from "./received.ts";
import { canRead, channelInfo, contentFilter, EMPTY_TOPIC_NAME } from "./conversation-handlers.ts";
import { getMsgs, presentIds, type ConvState, type Msg } from "./conversation-state.ts";
import type { ConvHandler, ConvHandlers } from "./protocol.ts";
import { highlight } from "./window.ts";

function me(caller: Caller | null): Caller {
  if (!caller) throw errors.accessDenied();
  return caller;
}

async function realmSettings(ctx: ActorContext, realmId: number): Promise<Obj> {
  const r = await ctx.call(realmRef(realmId), "registerRealmState", {});
  return r.settings;
}

/**
 * Those of `ids` (messages of this conversation) the caller may read
 * (Zulip's access_message): a participant's direct messages; in a channel
 * with content access, all of them, or with protected history only those
 * the caller received.
 */
async function readableIds(ctx: ActorContext, state: ConvState, c: Caller, ids: number[]): Promise<number[]> {
  const present = await presentIds(ctx, state, ids);
  if (!present.length) return [];
  if (isDmKey(state.key)) {
    const participants = state.key.slice(3).split(",").map(Number);
    return participants.includes(c.userId) ? present : [];
  }
  let ch;
  try {
    ch = await channelInfo(ctx, state, false, c.userId);
  } catch {
    return [];
  }
  if (!canRead(ch, c)) return [];
  return accessibleIds(ctx, state.realmId, c.userId, state.key, historyProtected(ch), present);
}

async function readableMsg(ctx: ActorContext, state: ConvState, c: Caller, id: number): Promise<Msg> {
  if (!(await readableIds(ctx, state, c, [id])).length) throw errors.invalidMessages();
  return (await getMsgs(ctx, state, [id]))[0]!;
}

// ---- GET /messages/{id}/history --------------------------------------------------

const HTML_TOKEN = /<[^>]*>|[^<\s]+|\s+/g;

/**
 * Zulip's content_html_diff, in linear time: the tokens (tags, words,
 * spaces) both versions share at the start and the end stay; the old
 * middle's text is shown deleted, the new middle's text inserted, and the
 * new middle's tags kept, so the result is as well formed as `after`.
 */
export function htmlDiff(before: string, after: string): string {
  const a = before.match(HTML_TOKEN) ?? [];
  const b = after.match(HTML_TOKEN) ?? [];
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf])
    suf++;
  const isTag = (t: string) => t.startsWith("<");
  const deleted = a
    .slice(pre, a.length - suf)
    .filter((t) => !isTag(t))
    .join("");
  const out: string[] = b.slice(0, pre);
  if (deleted.trim() !== "") out.push(`<span class="highlight_text_deleted">${deleted}</span>`);
  let run = "";
  const flush = () => {
    if (run.trim() !== "") out.push(`<span class="highlight_text_inserted">${run}</span>`);
    else out.push(run);
    run = "";
  };
  for (const t of b.slice(pre, b.length - suf)) {
    if (isTag(t)) {
      flush();
      out.push(t);
    } else run += t;
  }
  flush();
  out.push(...b.slice(b.length - suf));
  return `<div>${out.join("")}</div>`;
}

/**
 * The message's snapshots, oldest first (Zulip's fill_edit_history_entries,
 * then visible_edit_history_for_message): walking the stored history from
 * the newest edit back, each snapshot carries the content and topic right
 * after its edit; the last one is the original message.
 */
export function messageHistory(m: Msg, isChannel: boolean, policy: string, allowEmptyTopic: boolean): Obj[] {
  const display = (t: string) => (isChannel && t === "" && !allowEmptyTopic ? EMPTY_TOPIC_NAME : t);
  let content = m.content;
  let rendered = m.rendered;
  let topic = display(m.topic);
  const out: Obj[] = [];
  for (const e of m.editHistory) {
    const snap: Obj = {
      content,
      rendered_content: rendered,
      timestamp: e.timestamp as number,
      topic,
      user_id: typeof e.user_id === "number" ? e.user_id : null,
    };
    if (typeof e.prev_topic === "string") {
      topic = display(e.prev_topic);
      snap.prev_topic = topic;
    }
    if (typeof e.prev_content === "string") {
      snap.prev_content = e.prev_content;
      snap.prev_rendered_content = String(e.prev_rendered_content ?? "");
      snap.content_html_diff = htmlDiff(snap.prev_rendered_content as string, rendered);
      content = e.prev_content;
      rendered = snap.prev_rendered_content as string;
    }
    if (typeof e.prev_stream === "number") {
      snap.prev_stream = e.prev_stream;
      snap.stream = e.stream as Value;
    }
    out.push(snap);
  }
  out.push({ content, rendered_content: rendered, timestamp: m.timestamp, topic, user_id: m.senderId });
  const visible =
    policy === "moves"
      ? out.flatMap((s) => {
          if (s.prev_content === undefined) return [s];
          // A content edit shows only as the move it came with.
          if (s.prev_topic === undefined) return [];
          const { prev_content: _c, prev_rendered_content: _r, content_html_diff: _d, ...rest } = s;
          return [rest];
        })
      : out;
  return visible.reverse();
}

const messageEditHistory: ConvHandler<"messageEditHistory"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  const policy = String((await realmSettings(ctx, state.realmId)).message_edit_history_visibility_policy);
  if (policy === "none") throw errors.editHistoryDisabled();
  const m = await readableMsg(ctx, state, c, args.message_id);
  const history = messageHistory(m, !isDmKey(state.key), policy, args.allow_empty_topic_name === true);
  return { reply: { message_history: history } };
};

// ---- GET /messages/{id}/read_receipts -------------------------------------------

/**
 * Who has read the message, as Zulip's read_receipts view answers: users
 * with a read row and send_read_receipts on, active, never the sender.
 *
 * Cost: the rows live with each user actor, so the candidates are the
 * message's recipients as this conversation knows them (the DM's
 * participants, or the channel's current subscribers), and each is asked
 * once, all in one parallel batch: O(recipients) leaf calls, never a scan
 * of the organization. A user who holds a row without being a current
 * subscriber (unsubscribed since, or a historical row of a public channel)
 * is not asked, so is not listed.
 */
const readReceipts: ConvHandler<"readReceipts"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  const m = await readableMsg(ctx, state, c, args.message_id);
  if ((await realmSettings(ctx, state.realmId)).enable_read_receipts === false)
    throw errors.readReceiptsDisabled();
  const candidates = isDmKey(state.key)
    ? state.key.slice(3).split(",").map(Number)
    : (await channelInfo(ctx, state)).subscribers;
  const users = await roster(ctx, state.realmId);
  const asked = [...new Set(candidates)].filter((id) => id !== m.senderId && users.get(id)?.isActive);
  // Subscribers without an entry read it as a received row (received.ts).
  const spans = await channelSpans(ctx, state);
  const answers = await Promise.all(
    asked.map(
      async (id) =>
        (
          await ctx.call(userRef(state.realmId, id), "readReceipt", {
            message_id: m.id,
            conv: state.key,
            received: inSpans(spans.get(id) ?? [], m.id),
          })
        ).read,
    ),
  );
  const userIds = asked.filter((_, i) => answers[i]).sort((x, y) => x - y);
  return { reply: { user_ids: userIds } };
};

// ---- GET /messages/matches_narrow -------------------------------------------------

const escapeTopic = (t: string) => t.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`);

/**
 * Of `ids` (the caller's own rows, already filtered by the gateway's narrow
 * plan on everything but content), those matching `filters` (has, search),
 * with Zulip's match_content / match_subject: highlighted for a search,
 * else the rendered content and the escaped topic.
 */
const matchNarrow: ConvHandler<"matchNarrow"> = async (state, args, ctx, caller) => {
  const c = me(caller);
  const ids = await readableIds(ctx, state, c, args.ids);
  const f = args.filters ?? {};
  const search = f.search;
  const messages: Record<string, { match_content: string; match_subject: string }> = {};
  const msgs = await getMsgs(ctx, state, ids);
  for (const m of msgs) {
    if (!m || !contentFilter(m, f)) continue;
    const id = m.id;
    const subject = escapeTopic(m.topic);
    messages[String(id)] = {
      match_content: search === undefined ? m.rendered : highlight(m.rendered, search),
      match_subject: search === undefined ? subject : highlight(subject, search),
    };
  }
  return { reply: { messages } };
};

export const messageExtrasConversationHandlers: ConvHandlers<
  "messageEditHistory" | "readReceipts" | "matchNarrow"
> = {
  messageEditHistory,
  readReceipts,
  matchNarrow,
};
