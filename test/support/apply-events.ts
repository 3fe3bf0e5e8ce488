// A client's model of POST /register state and how each event changes it
// (what Zulip's apply_events does on the server and what its clients do):
// verify_action tests register, act, apply the events the queue got to the
// first state with `applyEvent`, and compare with a fresh register
// (`verifyAction`). A rule here is written from the API documentation of the
// event (https://zulip.com/api/get-events), not from this server's code, so
// a mismatch is a bug in one of them.

import assert from "node:assert/strict";
import type { Creds } from "./embedded.ts";
import { assertSuccess, drain, eventsUntil, type ApiHolder, type Ev } from "./zulip-asserts.ts";

/** Event types that change no POST /register state (checked for shape and recipients only). */
export const STATELESS = new Set([
  "typing",
  "typing_edit_message",
  "reaction",
  "attachment",
  "invites_changed",
  "realm_export",
  // Zulip keeps the consents out of the register (GET /export/realm/consents reads them).
  "realm_export_consent",
  "heartbeat",
]);

/** What the client asked for at register that changes how it applies events. */
export interface Caps {
  withSubscribers?: boolean;
  archivedChannels?: boolean;
}

function byId(list: Ev[], key: string, id: unknown): Ev | undefined {
  return list.find((x) => x[key] === id);
}

function sortBy(list: Ev[], key: string): void {
  list.sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0));
}

function applySubscription(state: Ev, e: Ev, caps: Caps): void {
  const lists = [state.subscriptions, state.unsubscribed, state.never_subscribed].filter(Boolean);
  switch (e.op) {
    case "add":
      for (const event of e.subscriptions) {
        // A client that registered without include_subscribers keeps none.
        const { subscribers, ...rest } = event;
        const sub = caps.withSubscribers ? { ...rest, subscribers } : rest;
        state.unsubscribed = state.unsubscribed.filter((s: Ev) => s.stream_id !== sub.stream_id);
        state.never_subscribed = state.never_subscribed.filter((s: Ev) => s.stream_id !== sub.stream_id);
        state.subscriptions.push(sub);
        // The subscription carries the channel's current count.
        const stream = byId(state.streams ?? [], "stream_id", sub.stream_id);
        if (stream && typeof sub.subscriber_count === "number")
          stream.subscriber_count = sub.subscriber_count;
      }
      sortBy(state.subscriptions, "name");
      break;
    case "remove":
      for (const gone of e.subscriptions) {
        const sub = byId(state.subscriptions, "stream_id", gone.stream_id);
        assert.ok(sub, `remove of a subscription the state lacks: ${gone.stream_id}`);
        state.subscriptions = state.subscriptions.filter((s: Ev) => s !== sub);
        // No peer_remove comes to the user who left: their own count drops by them.
        if (typeof sub.subscriber_count === "number") sub.subscriber_count -= 1;
        const stream = byId(state.streams ?? [], "stream_id", sub.stream_id);
        if (stream && typeof stream.subscriber_count === "number") stream.subscriber_count -= 1;
        state.unsubscribed.push(sub);
      }
      sortBy(state.unsubscribed, "name");
      break;
    case "update": {
      const sub = byId(state.subscriptions, "stream_id", e.stream_id);
      assert.ok(sub, `update of a subscription the state lacks: ${e.stream_id}`);
      sub[e.property === "in_home_view" ? "is_muted" : e.property] =
        e.property === "in_home_view" ? !e.value : e.value;
      break;
    }
    case "peer_add":
    case "peer_remove":
      for (const list of lists)
        for (const s of list) {
          if (!e.stream_ids.includes(s.stream_id) || !Array.isArray(s.subscribers)) continue;
          const set = new Set<number>(s.subscribers);
          for (const u of e.user_ids) {
            if (e.op === "peer_add") set.add(u);
            else set.delete(u);
          }
          s.subscribers = [...set].sort((a, b) => a - b);
        }
      for (const s of state.streams ?? [])
        if (e.stream_ids.includes(s.stream_id) && typeof s.subscriber_count === "number")
          s.subscriber_count += (e.op === "peer_add" ? 1 : -1) * e.user_ids.length;
      for (const list of lists)
        for (const s of list)
          if (e.stream_ids.includes(s.stream_id) && typeof s.subscriber_count === "number")
            s.subscriber_count += (e.op === "peer_add" ? 1 : -1) * e.user_ids.length;
      break;
    default:
      assert.fail(`no apply rule for subscription/${e.op}`);
  }
}

function applyStream(state: Ev, e: Ev, me: number, caps: Caps): void {
  switch (e.op) {
    case "create":
      for (const s of e.streams) {
        state.streams?.push(s);
        const mine = state.subscriptions.some((x: Ev) => x.stream_id === s.stream_id);
        if (!mine && !s.invite_only) {
          // Subscription-shaped: no is_default (that is a property of `streams` entries).
          const { is_default: _d, ...sub } = s;
          state.never_subscribed.push(sub);
          sortBy(state.never_subscribed, "name");
        }
      }
      if (state.streams) sortBy(state.streams, "name");
      break;
    case "delete":
      for (const s of e.streams ?? e.stream_ids.map((id: number) => ({ stream_id: id }))) {
        // `streams` lists active channels only, whatever the client's capabilities.
        if (state.streams) state.streams = state.streams.filter((x: Ev) => x.stream_id !== s.stream_id);
        for (const key of ["subscriptions", "unsubscribed", "never_subscribed"]) {
          // A client with the archived_channels capability keeps archived
          // channels and marks them; any other client drops them.
          if (caps.archivedChannels) {
            const sub = byId(state[key], "stream_id", s.stream_id);
            if (sub) sub.is_archived = true;
          } else state[key] = state[key].filter((x: Ev) => x.stream_id !== s.stream_id);
        }
      }
      break;
    case "update":
      for (const list of [state.streams, state.subscriptions, state.unsubscribed, state.never_subscribed])
        for (const s of list ?? [])
          if (s.stream_id === e.stream_id) {
            s[e.property] = e.value;
            if (e.rendered_description !== undefined) s.rendered_description = e.rendered_description;
            if (e.history_public_to_subscribers !== undefined)
              s.history_public_to_subscribers = e.history_public_to_subscribers;
            if (e.is_web_public !== undefined) s.is_web_public = e.is_web_public;
          }
      break;
    default:
      assert.fail(`no apply rule for stream/${e.op} (user ${me})`);
  }
}

function applyUserGroup(state: Ev, e: Ev): void {
  const groups = state.realm_user_groups;
  const g = e.group_id === undefined ? undefined : byId(groups, "id", e.group_id);
  switch (e.op) {
    case "add":
      groups.push(e.group);
      sortBy(groups, "id");
      return;
    case "remove":
      state.realm_user_groups = groups.filter((x: Ev) => x.id !== e.group_id);
      return;
  }
  assert.ok(g, `user_group/${e.op} for an unknown group ${e.group_id}`);
  switch (e.op) {
    case "update":
      Object.assign(g, e.data);
      break;
    case "add_members":
      g.members = [...new Set([...g.members, ...e.user_ids])].sort((a: number, b: number) => a - b);
      break;
    case "remove_members":
      g.members = g.members.filter((u: number) => !e.user_ids.includes(u));
      break;
    case "add_subgroups":
      g.direct_subgroup_ids = [...new Set([...g.direct_subgroup_ids, ...e.direct_subgroup_ids])].sort(
        (a: number, b: number) => a - b,
      );
      break;
    case "remove_subgroups":
      g.direct_subgroup_ids = g.direct_subgroup_ids.filter((x: number) => !e.direct_subgroup_ids.includes(x));
      break;
    default:
      assert.fail(`no apply rule for user_group/${e.op}`);
  }
}

function applyRealmUser(state: Ev, e: Ev, me: number): void {
  if (e.op === "add") {
    const { is_active: _active, ...person } = e.person;
    state.realm_users.push(person);
    sortBy(state.realm_users, "user_id");
    return;
  }
  if (e.op === "remove") {
    state.realm_users = state.realm_users.filter((u: Ev) => u.user_id !== e.person.user_id);
    return;
  }
  assert.equal(e.op, "update", `realm_user/${e.op}`);
  const { user_id, is_active, ...changes } = e.person;
  if (is_active === false) {
    const u = byId(state.realm_users, "user_id", user_id);
    assert.ok(u, "deactivation of a user who is not active");
    state.realm_users = state.realm_users.filter((x: Ev) => x !== u);
    state.realm_non_active_users.push(u);
    sortBy(state.realm_non_active_users, "user_id");
  } else if (is_active === true) {
    const u = byId(state.realm_non_active_users, "user_id", user_id);
    assert.ok(u, "reactivation of a user who is active");
    state.realm_non_active_users = state.realm_non_active_users.filter((x: Ev) => x !== u);
    state.realm_users.push(u);
    sortBy(state.realm_users, "user_id");
  }
  const u =
    byId(state.realm_users, "user_id", user_id) ?? byId(state.realm_non_active_users, "user_id", user_id);
  assert.ok(u, "update for an unknown user");
  if ("custom_profile_field" in changes) {
    const { id, value, rendered_value } = changes.custom_profile_field;
    u.profile_data ??= {};
    if (value === null) delete u.profile_data[String(id)];
    else u.profile_data[String(id)] = rendered_value === undefined ? { value } : { value, rendered_value };
    delete changes.custom_profile_field;
  }
  Object.assign(u, changes);
  if (user_id === me) {
    if ("full_name" in changes) state.full_name = changes.full_name;
    if ("role" in changes) {
      state.is_owner = changes.role === 100;
      state.is_admin = changes.role <= 200;
      state.is_moderator = changes.role === 300;
      state.is_guest = changes.role === 600;
    }
  }
}

function applyUnreadMove(state: Ev, e: Ev): void {
  const u = state.unread_msgs;
  if (!u || e.orig_subject === undefined || !Array.isArray(e.message_ids)) return;
  const newStream = e.new_stream_id ?? e.stream_id;
  const newTopic = e.subject ?? e.orig_subject;
  const moved: number[] = [];
  for (const entry of u.streams) {
    const keep = entry.unread_message_ids.filter((id: number) => !e.message_ids.includes(id));
    moved.push(...entry.unread_message_ids.filter((id: number) => e.message_ids.includes(id)));
    entry.unread_message_ids = keep;
  }
  u.streams = u.streams.filter((s: Ev) => s.unread_message_ids.length);
  if (!moved.length) return;
  let entry = u.streams.find((s: Ev) => s.stream_id === newStream && s.topic === newTopic);
  if (!entry) u.streams.push((entry = { stream_id: newStream, topic: newTopic, unread_message_ids: [] }));
  entry.unread_message_ids = [...entry.unread_message_ids, ...moved].sort((a, b) => a - b);
}

function applyDelete(state: Ev, e: Ev): void {
  const ids: number[] = e.message_ids ?? [e.message_id];
  const u = state.unread_msgs;
  if (u) {
    for (const list of [u.streams, u.pms, u.huddles])
      for (const entry of list)
        entry.unread_message_ids = entry.unread_message_ids.filter((x: number) => !ids.includes(x));
    u.streams = u.streams.filter((s: Ev) => s.unread_message_ids.length);
    u.pms = u.pms.filter((s: Ev) => s.unread_message_ids.length);
    u.huddles = u.huddles.filter((s: Ev) => s.unread_message_ids.length);
    u.mentions = u.mentions.filter((x: number) => !ids.includes(x));
    u.count = [...u.streams, ...u.pms, ...u.huddles].reduce(
      (n: number, s: Ev) => n + s.unread_message_ids.length,
      0,
    );
  }
  if (state.starred_messages)
    state.starred_messages = state.starred_messages.filter((x: number) => !ids.includes(x));
}

/** channel_folder add/update/reorder on `channel_folders` (kept in their order, ties by id). */
function applyChannelFolder(state: Ev, e: Ev): void {
  const folders: Ev[] = state.channel_folders;
  if (e.op === "add") folders.push(e.channel_folder);
  else if (e.op === "update") Object.assign(byId(folders, "id", e.channel_folder_id) ?? {}, e.data);
  else if (e.op === "reorder") {
    const order = new Map<number, number>((e.order as number[]).map((id, i) => [id, i]));
    for (const f of folders) f.order = order.get(f.id) ?? f.order;
  } else assert.fail(`no apply rule for channel_folder/${e.op}`);
  folders.sort((a, b) => a.order - b.order || a.id - b.id);
}

/** Apply one event (without its `id`) to a POST /register state, as a client does. */
export function applyEvent(state: Ev, e: Ev, me: number, caps: Caps = {}): void {
  if (STATELESS.has(e.type)) return;
  switch (e.type) {
    case "realm":
      if (e.op === "update") state[`realm_${e.property}`] = e.value;
      else if (e.op === "update_dict")
        for (const [k, v] of Object.entries(e.data)) {
          if (k === "authentication_methods") state.realm_authentication_methods = v;
          else state[`realm_${k}`] = v;
        }
      else assert.fail(`no apply rule for realm/${e.op}`);
      break;
    case "realm_user":
      applyRealmUser(state, e, me);
      break;
    case "realm_bot":
      if (e.op === "add") state.realm_bots.push(e.bot);
      else if (e.op === "update")
        Object.assign(byId(state.realm_bots, "user_id", e.bot.user_id) ?? {}, e.bot);
      else if (e.op === "delete" || e.op === "remove")
        state.realm_bots = state.realm_bots.filter((b: Ev) => b.user_id !== e.bot.user_id);
      else assert.fail(`no apply rule for realm_bot/${e.op}`);
      break;
    case "realm_emoji":
      state.realm_emoji = e.realm_emoji;
      break;
    case "realm_linkifiers":
      state.realm_linkifiers = e.realm_linkifiers;
      break;
    case "realm_playgrounds":
      state.realm_playgrounds = e.realm_playgrounds;
      break;
    case "realm_user_settings_defaults":
      state.realm_user_settings_defaults[e.property] = e.value;
      break;
    case "default_streams":
      state.realm_default_streams = e.default_streams;
      break;
    case "custom_profile_fields":
      state.custom_profile_fields = e.fields;
      break;
    case "alert_words":
      state.alert_words = e.alert_words;
      break;
    case "muted_users":
      state.muted_users = e.muted_users;
      break;
    case "muted_topics":
      state.muted_topics = e.muted_topics;
      break;
    case "user_settings":
      state.user_settings[e.property] = e.value;
      break;
    case "drafts":
      if (e.op === "add") state.drafts.push(...e.drafts);
      else if (e.op === "update")
        state.drafts = state.drafts.map((d: Ev) => (d.id === e.draft.id ? e.draft : d));
      else if (e.op === "remove") state.drafts = state.drafts.filter((d: Ev) => d.id !== e.draft_id);
      else assert.fail(`no apply rule for drafts/${e.op}`);
      break;
    case "saved_snippets":
      if (e.op === "add") state.saved_snippets.push(e.saved_snippet);
      else if (e.op === "update")
        state.saved_snippets = state.saved_snippets.map((s: Ev) =>
          s.id === e.saved_snippet.id ? e.saved_snippet : s,
        );
      else if (e.op === "remove")
        state.saved_snippets = state.saved_snippets.filter((s: Ev) => s.id !== e.saved_snippet_id);
      else assert.fail(`no apply rule for saved_snippets/${e.op}`);
      break;
    case "scheduled_messages":
      if (e.op === "add") state.scheduled_messages.push(...e.scheduled_messages);
      else if (e.op === "update")
        state.scheduled_messages = state.scheduled_messages.map((m: Ev) =>
          m.scheduled_message_id === e.scheduled_message.scheduled_message_id ? e.scheduled_message : m,
        );
      else if (e.op === "remove")
        state.scheduled_messages = state.scheduled_messages.filter(
          (m: Ev) => m.scheduled_message_id !== e.scheduled_message_id,
        );
      else assert.fail(`no apply rule for scheduled_messages/${e.op}`);
      sortBy(state.scheduled_messages, "scheduled_delivery_timestamp");
      break;
    case "user_topic": {
      const { type: _t, ...row } = e;
      state.user_topics = state.user_topics.filter(
        (t: Ev) => !(t.stream_id === row.stream_id && t.topic_name === row.topic_name),
      );
      if (row.visibility_policy !== 0) state.user_topics.push(row);
      break;
    }
    case "user_status": {
      const key = String(e.user_id);
      const entry = { ...(state.user_status[key] ?? {}) };
      if (e.away === true) entry.away = true;
      if (e.away === false) delete entry.away;
      if (e.status_text !== undefined) {
        if (e.status_text === "") delete entry.status_text;
        else entry.status_text = e.status_text;
      }
      if (e.emoji_name !== undefined) {
        if (e.emoji_name === "") {
          delete entry.emoji_name;
          delete entry.emoji_code;
          delete entry.reaction_type;
        } else
          Object.assign(entry, {
            emoji_name: e.emoji_name,
            emoji_code: e.emoji_code,
            reaction_type: e.reaction_type,
          });
      }
      if (Object.keys(entry).length) state.user_status[key] = entry;
      else delete state.user_status[key];
      break;
    }
    case "subscription":
      applySubscription(state, e, caps);
      break;
    case "stream":
      applyStream(state, e, me, caps);
      break;
    case "user_group":
      applyUserGroup(state, e);
      break;
    case "update_message":
      applyUnreadMove(state, e);
      break;
    case "delete_message":
      applyDelete(state, e);
      break;
    case "message": {
      const m = e.message;
      state.max_message_id = Math.max(state.max_message_id ?? -1, m.id);
      const u = state.unread_msgs;
      if (u && !e.flags.includes("read") && m.type === "stream") {
        let entry = u.streams.find((s: Ev) => s.stream_id === m.stream_id && s.topic === m.subject);
        if (!entry)
          u.streams.push((entry = { stream_id: m.stream_id, topic: m.subject, unread_message_ids: [] }));
        entry.unread_message_ids = [...entry.unread_message_ids, m.id].sort((a, b) => a - b);
        if (e.flags.includes("mentioned") || e.flags.includes("stream_wildcard_mentioned"))
          u.mentions.push(m.id);
        u.count += 1;
      }
      break;
    }
    case "device": {
      // A new device has no push registration yet; updates carry the changed fields.
      const key = String(e.device_id);
      if (e.op === "add")
        state.devices[key] = {
          push_key_id: null,
          push_token_id: null,
          pending_push_token_id: null,
          push_token_last_updated_timestamp: null,
          push_registration_error_code: null,
        };
      else if (e.op === "remove") delete state.devices[key];
      else if (e.op === "update") {
        const { type: _t, op: _o, device_id: _d, ...changes } = e;
        Object.assign(state.devices[key], changes);
      } else assert.fail(`no apply rule for device/${e.op}`);
      break;
    }
    case "presence":
      if (e.presences) for (const [id, p] of Object.entries(e.presences)) state.presences[id] = p;
      break;
    case "channel_folder":
      applyChannelFolder(state, e);
      break;
    case "navigation_view":
      if (e.op === "add") state.navigation_views.push(e.navigation_view);
      else if (e.op === "update")
        Object.assign(byId(state.navigation_views, "fragment", e.fragment) ?? {}, e.data);
      else if (e.op === "remove")
        state.navigation_views = state.navigation_views.filter((v: Ev) => v.fragment !== e.fragment);
      else assert.fail(`no apply rule for navigation_view/${e.op}`);
      break;
    case "reminders":
      if (e.op === "add") {
        state.reminders.push(...e.reminders);
        // The register lists them by delivery time (ties by id).
        state.reminders.sort(
          (a: Ev, b: Ev) =>
            a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp || a.reminder_id - b.reminder_id,
        );
      } else if (e.op === "remove")
        state.reminders = state.reminders.filter((r: Ev) => r.reminder_id !== e.reminder_id);
      else assert.fail(`no apply rule for reminders/${e.op}`);
      break;
    // The legacy twins of user_settings (clients without user_settings_object):
    // the setting at the top level of the state.
    case "update_display_settings":
      state[e.setting_name] = e.setting;
      break;
    case "update_global_notifications":
      state[e.notification_name] = e.setting;
      break;
    default:
      assert.fail(`no apply rule for ${e.type}`);
  }
}

/** Where two register values first differ, for a readable failure. */
function describeDiff(key: string, got: Ev, want: Ev, events: Ev[]): string {
  const where = (a: Ev, b: Ev, path: string): string => {
    if (JSON.stringify(a) === JSON.stringify(b)) return "";
    if (a && b && typeof a === "object" && typeof b === "object") {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
        const d = where(a[k], b[k], `${path}.${k}`);
        if (d) return d;
      }
    }
    return `${path}: applied ${JSON.stringify(a)?.slice(0, 300)}, fresh ${JSON.stringify(b)?.slice(0, 300)}`;
  };
  return `${where(got, want, key)} (events: ${events.map((e) => `${e.type}/${e.op ?? ""}`).join(", ")})`;
}

export interface VerifyOptions {
  /** POST /register parameters of both registers. */
  register?: Record<string, unknown>;
  /** The event types the action must cause (each at least once). */
  types: string[];
  /** Event types the action may also cause; no types beyond these two lists are accepted. */
  optional?: string[];
  /** Register keys to compare after applying the events. */
  keys: string[];
  /** Extra checks of the events. */
  check?: (events: Ev[]) => void;
}

/**
 * verify_action: register as `who`, act, collect the events (until every
 * expected type arrived and the queue is quiet), apply them to the first
 * state and compare `keys` with a fresh register. Returns the events.
 */
export async function verifyAction(
  srv: ApiHolder,
  who: Creds & { userId: number },
  action: () => Promise<void>,
  opts: VerifyOptions,
): Promise<Ev[]> {
  const params = opts.register ?? {};
  const first = await srv.api("POST", "/register", params, who);
  assertSuccess(first);
  const state = first.body;
  const q = { id: state.queue_id as string, last: state.last_event_id as number, auth: who };
  await action();
  const seen = (evs: Ev[]) => opts.types.every((t) => evs.some((e) => e.type === t));
  const events = await eventsUntil(srv, q, seen);
  assert.ok(seen(events), `expected ${opts.types.join(", ")}; got ${JSON.stringify(events)}`);
  // Anything else the action causes is delivered with it; a short settle catches stragglers.
  for (let i = 0; i < 4; i++) {
    await new Promise((r) => setTimeout(r, 50));
    events.push(...(await drain(srv, q)));
  }
  const allowed = new Set([...opts.types, ...(opts.optional ?? [])]);
  for (const e of events) assert.ok(allowed.has(e.type), `unexpected event ${JSON.stringify(e)}`);
  opts.check?.(events);
  for (const e of events) {
    const { id: _id, ...body } = e;
    applyEvent(state, body, who.userId, {
      withSubscribers: params.include_subscribers === true,
      archivedChannels: (params.client_capabilities as Ev)?.archived_channels === true,
    });
  }
  const fresh = await srv.api("POST", "/register", params, who);
  assertSuccess(fresh);
  for (const k of opts.keys)
    assert.deepEqual(state[k], fresh.body[k], describeDiff(k, state[k], fresh.body[k], events));
  await srv.api("DELETE", "/events", { queue_id: state.queue_id }, who);
  await srv.api("DELETE", "/events", { queue_id: fresh.body.queue_id }, who);
  return events;
}
