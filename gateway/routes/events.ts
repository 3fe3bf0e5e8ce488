// POST /register, GET /events and DELETE /events (Zulip's
// zerver/views/events_register.py and zerver/tornado/views.py).
//
// Long-polling without sticky routing: GET /events is one actor request to
// the queue actor of the queue's owner (the owner's user id is part of the
// queue id, so any gateway finds the shard). When the queue has nothing to
// return the actor parks the request and answers it later (an event, a
// heartbeat, a newer poll); this gateway only holds the HTTP request, with a
// deadline above the longest park.

import {
  DEFAULT_QUEUE_TIMEOUT_SECS,
  FEATURE_LEVEL,
  MAX_QUEUE_TIMEOUT_SECS,
  MERGE_BASE,
  MOBILE_QUEUE_TIMEOUT_SECS,
  ZULIP_VERSION,
  isSupportedNarrowTerm,
  queueOwner,
  queueRef,
  realmRef,
} from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { Caller, Obj, Value } from "../../actors/types.ts";
import { c, defineRoute, p, param, type Parser, type RouteDef, type RouteRequest } from "../index.ts";
import { registerAreas } from "../register/index.ts";
import type { RegisterContext, RegisterParams } from "../register/types.ts";

/** Longest park is a heartbeat wait (45 s + up to 10 s); the gateway waits longer. */
export const EVENTS_TIMEOUT_MS = 100_000;

const ROLE_GUEST = 600;
/** Most state fetches of one POST /register while events keep landing in its new queue. */
const MAX_REGISTER_FETCHES = 4;

/**
 * Test-only seam (inert unless a test sets it): runs after POST /register
 * created the queue and before it fetches the initial state, so a test can
 * make an event land in between.
 */
export const registerTestHooks: { afterQueue?: (caller: Caller, queueId: string) => Promise<void> } = {};

const CAPABILITIES = [
  "notification_settings_null",
  "bulk_message_deletion",
  "user_avatar_url_field_optional",
  "stream_typing_notifications",
  "user_settings_object",
  "linkifier_url_template",
  "user_list_incomplete",
  "include_deactivated_groups",
  "archived_channels",
  "empty_topic_name",
  "simplified_presence_events",
  "individual_emoji_changes",
] as const;

const capabilitiesParser = p.json(
  c.dict(
    Object.fromEntries(CAPABILITIES.map((k) => [k, { check: c.bool() }])) as Record<
      string,
      { check: (v: unknown, name: string) => boolean }
    >,
    { allowExtra: true },
  ),
);

/** include_subscribers: true, false or "partial" (JSON or bare text). */
export const includeSubscribersParser: Parser<"true" | "false" | "partial"> = (raw, name) => {
  if (raw === "true" || raw === "false" || raw === "partial") return raw;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw errors.notJson(name);
  }
  if (v === true) return "true";
  if (v === false) return "false";
  if (v === "partial") return "partial";
  throw errors.invalid(name);
};

/** idle_queue_timeout (FL 481): an integer >= 1 or "mobile". */
const idleTimeoutParser: Parser<number> = (raw, name) => {
  if (raw === "mobile" || raw === '"mobile"') return MOBILE_QUEUE_TIMEOUT_SECS;
  return p.int({ min: 1 })(raw, name);
};

const narrowParser: Parser<[string, string][]> = (raw, name) => {
  const terms = p.json(c.list(c.list(c.string())))(raw, name);
  return terms.map((t, i) => {
    if (t.length !== 2) throw errors.notLength(`${name}[${i}]`, 2);
    const [operator, operand] = t as [string, string];
    if (!isSupportedNarrowTerm(operator, operand)) throw errors.narrowOperatorNotSupported(operator);
    return [operator, operand];
  });
};

const REGISTER_PARAMS = {
  apply_markdown: param(p.bool(), { default: false }),
  client_gravatar: param(p.bool()),
  include_subscribers: param(includeSubscribersParser, { default: "false" as const }),
  slim_presence: param(p.bool(), { default: false }),
  presence_history_limit_days: param(p.int()),
  idle_queue_timeout: param(idleTimeoutParser),
  // Zulip 10.2's undocumented name for the same thing (0: the default).
  queue_lifespan_secs: param(p.int({ min: 0 })),
  event_types: param(p.stringList()),
  all_public_streams: param(p.bool(), { default: false }),
  client_capabilities: param(capabilitiesParser),
  fetch_event_types: param(p.stringList()),
  narrow: param(narrowParser, { default: [] as [string, string][] }),
};

function timeoutSecs(params: Record<string, unknown>): number {
  const idle = params.idle_queue_timeout as number | undefined;
  const lifespan = params.queue_lifespan_secs as number | undefined;
  const secs = idle ?? (lifespan ? lifespan : DEFAULT_QUEUE_TIMEOUT_SECS);
  return Math.min(secs, MAX_QUEUE_TIMEOUT_SECS);
}

function capabilitiesOf(params: Record<string, unknown>): Record<string, boolean> {
  const raw = (params.client_capabilities ?? {}) as Record<string, boolean | undefined>;
  const out: Record<string, boolean> = {};
  for (const k of CAPABILITIES) if (raw[k] !== undefined) out[k] = raw[k]!;
  return out;
}

/** Initial state of every area whose fetch types were asked for (all when none were). */
async function fetchAreas(req: RouteRequest, caller: Caller | null, params: RegisterParams): Promise<Obj> {
  const wanted = (req.params.fetch_event_types ?? req.params.event_types) as string[] | undefined;
  const ctx: RegisterContext = {
    caller,
    realmId: req.realmId,
    host: req.host,
    scheme: req.scheme,
    params,
    call: req.call,
  };
  const areas = registerAreas.filter(
    (a) => wanted === undefined || a.fetchTypes.some((t) => wanted.includes(t)),
  );
  const parts = await Promise.all(areas.map((a) => a.fetch(ctx)));
  return Object.assign({}, ...parts) as Obj;
}

const register = defineRoute({
  method: "POST",
  path: "/register",
  auth: "optional",
  params: REGISTER_PARAMS,
  async handler(req) {
    const caller = req.caller;
    const clientGravatar = req.params.client_gravatar ?? caller !== null;
    const params: RegisterParams = {
      apply_markdown: req.params.apply_markdown,
      client_gravatar: clientGravatar,
      include_subscribers: req.params.include_subscribers,
      slim_presence: req.params.slim_presence,
      presence_history_limit_days: req.params.presence_history_limit_days ?? null,
      all_public_streams: req.params.all_public_streams,
      client_capabilities: capabilitiesOf(req.params),
      narrow: req.params.narrow,
    };
    const base = {
      zulip_version: ZULIP_VERSION,
      zulip_feature_level: FEATURE_LEVEL,
      zulip_merge_base: MERGE_BASE,
    };

    if (caller === null) {
      // Spectators: only where the realm allows public access (Zulip's
      // MissingAuthenticationError otherwise), with no queue.
      const info = await req.call(realmRef(req.realmId), "publicInfo", {});
      if (!info.webPublicAccessEnabled) throw errors.notLoggedIn();
      if (clientGravatar) throw errors.anonymousRegisterParam("client_gravatar");
      if (params.include_subscribers !== "false") throw errors.anonymousRegisterParam("include_subscribers");
      params.all_public_streams = false;
      return { queue_id: null, last_event_id: -1, ...base, ...(await fetchAreas(req, null, params)) };
    }

    if (params.all_public_streams && caller.role === ROLE_GUEST) throw errors.userNotAuthorizedForQuery();
    const ref = queueRef(caller.realmId, caller.userId);
    const q = await req.call(ref, "register", {
      eventTypes: req.params.event_types ?? null,
      narrow: params.narrow,
      capabilities: params.client_capabilities,
      applyMarkdown: params.apply_markdown,
      clientGravatar,
      allPublicStreams: params.all_public_streams,
      timeoutSecs: timeoutSecs(req.params),
    });
    // The register race: an event that lands in the new queue while the
    // state is fetched may or may not be in the state. Zulip applies such
    // events to the state and returns the later last_event_id; we fetch the
    // state again instead. An event in the queue before a fetch starts was
    // emitted after its facts were applied, so that fetch reflects it:
    // returning last_event_id = the newest id seen before the last fetch
    // hides exactly the events the state already holds.
    let state: Obj;
    let cut = q.last_event_id;
    try {
      await registerTestHooks.afterQueue?.(caller, q.queue_id);
      state = await fetchAreas(req, caller, params);
      for (let fetches = 1; fetches < MAX_REGISTER_FETCHES; fetches++) {
        const seen = await req.call(ref, "newest", { queueId: q.queue_id });
        if (seen.last_event_id === cut) break;
        cut = seen.last_event_id;
        state = await fetchAreas(req, caller, params);
      }
    } catch (err) {
      // Do not leave a queue behind that its client never learns about.
      await req.call(ref, "delete", { queueId: q.queue_id }).catch(() => undefined);
      throw err;
    }
    return {
      ...state,
      queue_id: q.queue_id,
      last_event_id: cut,
      ...base,
      idle_queue_timeout_secs: q.idle_queue_timeout_secs,
    };
  },
});

/** The queue actor for a queue id the caller may use, or BAD_EVENT_QUEUE_ID. */
function ownQueueRef(req: RouteRequest, queueId: string) {
  const caller = req.caller!;
  const owner = queueOwner(queueId);
  if (owner === null || owner !== caller.userId) throw errors.badEventQueueId(queueId);
  return queueRef(caller.realmId, owner);
}

// Register-through-GET (queue_id omitted with dont_block): Zulip's internal
// path, with its registration parameters.
const GET_CAPABILITY_PARAMS = [
  "bulk_message_deletion",
  "stream_typing_notifications",
  "user_settings_object",
  "linkifier_url_template",
  "user_list_incomplete",
  "include_deactivated_groups",
  "archived_channels",
  "empty_topic_name",
  "simplified_presence_events",
] as const;

const getEvents = defineRoute({
  method: "GET",
  path: "/events",
  auth: "required",
  timeoutMs: EVENTS_TIMEOUT_MS,
  params: {
    queue_id: param(p.string()),
    last_event_id: param(p.int()),
    dont_block: param(p.bool(), { default: false }),
    apply_markdown: param(p.bool(), { default: false }),
    client_gravatar: param(p.bool(), { default: false }),
    all_public_streams: param(p.bool(), { default: false }),
    event_types: param(p.stringList()),
    narrow: param(narrowParser, { default: [] as [string, string][] }),
    lifespan_secs: param(p.int({ min: 0 })),
    ...Object.fromEntries(GET_CAPABILITY_PARAMS.map((k) => [k, param(p.bool())])),
  },
  // Not async: the poll is the actor call's own promise, so a parked poll
  // keeps no async frame of this handler (docs/benchmarks.md).
  handler(req) {
    const queueId = req.params.queue_id;
    const dontBlock = req.params.dont_block;
    if (queueId === undefined) {
      if (!dontBlock) return Promise.reject(errors.missingQueueId());
      return registerThroughGet(req);
    }
    const lastEventId = req.params.last_event_id;
    if (lastEventId === undefined) return Promise.reject(errors.missingLastEventId());
    let ref;
    try {
      ref = ownQueueRef(req, queueId);
    } catch (err) {
      return Promise.reject(err);
    }
    // Answered as the queue actor's reply travelled: in cluster mode its
    // JSON text is spliced into the envelope, neither parsed nor written again.
    return req.relay(ref, "poll", { queueId, lastEventId, dontBlock });
  },
});

/** GET /events without queue_id (and with dont_block): register a queue, no initial state. */
async function registerThroughGet(req: RouteRequest): Promise<Obj> {
  const caller = req.caller!;
  if (req.params.all_public_streams === true && caller.role === ROLE_GUEST)
    throw errors.userNotAuthorizedForQuery();
  const capabilities: Record<string, Value> = {};
  for (const k of GET_CAPABILITY_PARAMS)
    if (req.params[k] !== undefined) capabilities[k] = req.params[k] as boolean;
  const lifespan = req.params.lifespan_secs as number | undefined;
  const q = await req.call(queueRef(caller.realmId, caller.userId), "register", {
    eventTypes: (req.params.event_types as string[] | undefined) ?? null,
    narrow: req.params.narrow as [string, string][],
    capabilities,
    applyMarkdown: req.params.apply_markdown as boolean,
    clientGravatar: req.params.client_gravatar as boolean,
    allPublicStreams: req.params.all_public_streams as boolean,
    timeoutSecs: Math.min(lifespan ? lifespan : DEFAULT_QUEUE_TIMEOUT_SECS, MAX_QUEUE_TIMEOUT_SECS),
  });
  return { events: [], queue_id: q.queue_id };
}

const deleteEvents = defineRoute({
  method: "DELETE",
  path: "/events",
  auth: "required",
  params: { queue_id: param(p.string(), { required: true }) },
  async handler(req) {
    const queueId = req.params.queue_id;
    await req.call(ownQueueRef(req, queueId), "delete", { queueId });
    return {};
  },
});

export const eventRoutes: RouteDef[] = [register, getEvents, deleteEvents];
