// Linkifier handlers of the realm actor (Zulip's
// zerver/views/realm_linkifiers.py). Every change sends realm_linkifiers
// (the whole list) to all active users; queues without the
// linkifier_url_template capability drop it (queue/shape.ts).

import { errors } from "../errors.ts";
import type { DecisionOf } from "../protocol.ts";
import type { Obj } from "../types.ts";
import {
  checkLinkifier,
  formatLinkifiers,
  type Linkifier,
  type LinkifierFact,
  type LinkifierInput,
  applyLinkifierFact,
} from "./linkifiers.ts";
import { requireAdmin } from "./admin.ts";
import type { RealmHandler } from "./handler.ts";
import type { RealmState } from "./state.ts";

/** Facts plus the realm_linkifiers event with the list as it will be. */
function change(state: RealmState, facts: LinkifierFact[]): DecisionOf<Record<string, never>>;
function change<R>(state: RealmState, facts: LinkifierFact[], reply: R): DecisionOf<R>;
function change(state: RealmState, facts: LinkifierFact[], reply: unknown = {}): DecisionOf<unknown> {
  const after = { linkifiers: structuredClone(state.linkifiers ?? { items: [] }) };
  for (const f of facts) applyLinkifierFact(after, f);
  return {
    facts: facts as unknown as Obj[],
    events: [
      {
        event: { type: "realm_linkifiers", realm_linkifiers: formatLinkifiers(after) },
        userIds: [],
        everyone: true,
      },
    ],
    reply,
  };
}

function input(args: LinkifierInput): LinkifierInput {
  const out: LinkifierInput = { pattern: args.pattern, url_template: args.url_template };
  if (typeof args.example_input === "string") out.example_input = args.example_input;
  if (typeof args.reverse_template === "string") out.reverse_template = args.reverse_template;
  if (args.alternative_url_templates !== undefined)
    out.alternative_url_templates = [...args.alternative_url_templates];
  return out;
}

function items(state: RealmState): Linkifier[] {
  return state.linkifiers?.items ?? [];
}

/** GET /realm/linkifiers (any member; Zulip serves it to every user). */
const listLinkifiers: RealmHandler<"listLinkifiers"> = (state) => {
  if (!state.created) throw errors.invalidSubdomain();
  return { reply: { linkifiers: formatLinkifiers(state) } };
};

/** POST /realm/filters -> {id}. */
const addLinkifier: RealmHandler<"addLinkifier"> = async (state, args, ctx, caller) => {
  requireAdmin(state, caller);
  const checked = checkLinkifier(input(args), items(state));
  const id = await ctx.nextId(`linkifier.${state.realmId}`);
  return change(state, [{ type: "linkifierAdded", linkifier: { id, ...checked } }], { id });
};

/** PATCH /realm/filters/{id}. */
const updateLinkifier: RealmHandler<"updateLinkifier"> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const id = args.id;
  const current = items(state).find((l) => l.id === id);
  if (!current) throw errors.linkifierNotFound();
  const checked = checkLinkifier(
    input(args),
    items(state).filter((l) => l.id !== id),
  );
  return change(state, [{ type: "linkifierUpdated", linkifier: { id, ...checked } }]);
};

/** DELETE /realm/filters/{id}. */
const removeLinkifier: RealmHandler<"removeLinkifier"> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const id = args.id;
  if (!items(state).some((l) => l.id === id)) throw errors.filterNotFound();
  return change(state, [{ type: "linkifierRemoved", id }]);
};

/** PATCH /realm/linkifiers: ordered_linkifier_ids, every linkifier exactly once. */
const reorderLinkifiers: RealmHandler<"reorderLinkifiers"> = (state, args, _ctx, caller) => {
  requireAdmin(state, caller);
  const ids = args.ids;
  if (new Set(ids).size < ids.length) throw errors.linkifierOrderDuplicates();
  const existing = new Set(items(state).map((l) => l.id));
  if (existing.size !== ids.length || ids.some((id) => !existing.has(id)))
    throw errors.linkifierOrderIncomplete();
  return change(state, [{ type: "linkifiersReordered", ids }]);
};

export const linkifierHandlers = {
  listLinkifiers,
  addLinkifier,
  updateLinkifier,
  removeLinkifier,
  reorderLinkifiers,
};
