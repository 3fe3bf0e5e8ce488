// Linkifier handlers of the realm actor (Zulip's
// zerver/views/realm_linkifiers.py). Every change sends realm_linkifiers
// (the whole list) to all active users; queues without the
// linkifier_url_template capability drop it (queue/shape.ts).

import { errors } from "../errors.ts";
import type { ActorContext, Decision, Handler, Obj, Value } from "../types.ts";
import {
  checkLinkifier,
  formatLinkifiers,
  type Linkifier,
  type LinkifierFact,
  type LinkifierInput,
  applyLinkifierFact,
} from "./linkifiers.ts";
import { activeUserIds, requireAdmin } from "./admin.ts";
import type { RealmState } from "./state.ts";

/** Facts plus the realm_linkifiers event with the list as it will be. */
function change(state: RealmState, facts: LinkifierFact[], reply: Value = {}): Decision {
  const after = { linkifiers: structuredClone(state.linkifiers ?? { items: [] }) };
  for (const f of facts) applyLinkifierFact(after, f);
  return {
    facts: facts as unknown as Obj[],
    events: [
      {
        event: { type: "realm_linkifiers", realm_linkifiers: formatLinkifiers(after) as Value },
        userIds: activeUserIds(state),
      },
    ],
    reply,
  };
}

function input(args: Obj): LinkifierInput {
  const out: LinkifierInput = { pattern: String(args.pattern), url_template: String(args.url_template) };
  if (typeof args.example_input === "string") out.example_input = args.example_input;
  if (typeof args.reverse_template === "string") out.reverse_template = args.reverse_template;
  if (Array.isArray(args.alternative_url_templates))
    out.alternative_url_templates = args.alternative_url_templates.map(String);
  return out;
}

function items(state: RealmState): Linkifier[] {
  return state.linkifiers?.items ?? [];
}

/** GET /realm/linkifiers (any member; Zulip serves it to every user). */
const listLinkifiers: Handler<RealmState> = (state) => {
  if (!state.created) throw errors.invalidSubdomain();
  return { reply: { linkifiers: formatLinkifiers(state) as Value } };
};

/** POST /realm/filters -> {id}. */
const addLinkifier: Handler<RealmState> = async (state, args, ctx: ActorContext, caller) => {
  requireAdmin(state, caller);
  const checked = checkLinkifier(input(args), items(state));
  const id = await ctx.nextId(`linkifier.${state.realmId}`);
  return change(state, [{ type: "linkifierAdded", linkifier: { id, ...checked } }], { id });
};

/** PATCH /realm/filters/{id}. */
const updateLinkifier: Handler<RealmState> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const id = Number(args.id);
  const current = items(state).find((l) => l.id === id);
  if (!current) throw errors.linkifierNotFound();
  const checked = checkLinkifier(
    input(args),
    items(state).filter((l) => l.id !== id),
  );
  return change(state, [{ type: "linkifierUpdated", linkifier: { id, ...checked } }]);
};

/** DELETE /realm/filters/{id}. */
const removeLinkifier: Handler<RealmState> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const id = Number(args.id);
  if (!items(state).some((l) => l.id === id)) throw errors.filterNotFound();
  return change(state, [{ type: "linkifierRemoved", id }]);
};

/** PATCH /realm/linkifiers: ordered_linkifier_ids, every linkifier exactly once. */
const reorderLinkifiers: Handler<RealmState> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const ids = (args.ids as number[]) ?? [];
  if (new Set(ids).size < ids.length) throw errors.linkifierOrderDuplicates();
  const existing = new Set(items(state).map((l) => l.id));
  if (existing.size !== ids.length || ids.some((id) => !existing.has(id)))
    throw errors.linkifierOrderIncomplete();
  return change(state, [{ type: "linkifiersReordered", ids }]);
};

export const linkifierHandlers: Record<string, Handler<RealmState>> = {
  listLinkifiers,
  addLinkifier,
  updateLinkifier,
  removeLinkifier,
  reorderLinkifiers,
};
