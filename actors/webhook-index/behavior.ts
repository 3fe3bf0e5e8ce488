// The webhook index kind: one actor per realm (key "~index") listing the
// bots that may have pending outgoing-webhook deliveries, which the
// node-side worker reads when it takes over shards, to resume them (timers
// are not durable). docs/webhooks.md, "Resuming after a crash".
//
// A bot marks itself here (its call, awaited before the append of its first
// pending delivery) and the worker clears it on the bot's "webhook.idle"
// notice. Marks and clears carry the bot's generation (deliveries ever
// queued), so a late clear never removes a newer mark. Internal, a leaf: it
// calls nobody.
//
// It was the webhook kind's second role until it became its own kind: its
// actor keeps the storage id webhook.<realm>.~index (storedAs), so its
// journal and snapshots are read unchanged, and it owns that one key
// (ownsKey), the webhook kind every other.

import { INDEX_KEY } from "../addresses.ts";
import { errors } from "../errors.ts";
import { defineBehavior, handlersOf, type HandlerOf } from "../protocol.ts";
import type { ActorRef, Caller, Obj } from "../types.ts";
import { webhookIndexProtocol, type WebhookIndexProtocol } from "./protocol.ts";

/** SNAPSHOT: a new field needs a default in fromSnapshot. */
export interface WebhookIndexState {
  realmId: number;
  /** Bot id -> generation of its latest mark. */
  bots: Record<string, number>;
}

export type WebhookIndexFact =
  { type: "marked"; botId: number; gen: number } | { type: "cleared"; botId: number };

type IndexHandler<M extends keyof WebhookIndexProtocol> = HandlerOf<
  WebhookIndexState,
  WebhookIndexProtocol,
  M
>;

function indexFact(f: WebhookIndexFact): Obj {
  return f as unknown as Obj;
}

function internal(caller: Caller | null): void {
  if (caller) throw errors.accessDenied();
}

function botIdArg(args: { botId: number }): number {
  // The worker forwards a notice's untyped data (clear): check it still.
  if (!Number.isSafeInteger(args.botId) || args.botId <= 0) throw errors.internal();
  return args.botId;
}

/** A bot may have pending deliveries from generation `gen` on. */
const mark: IndexHandler<"mark"> = (state, args, _ctx, caller) => {
  internal(caller);
  const botId = botIdArg(args);
  const gen = args.gen;
  if (!Number.isSafeInteger(gen)) throw errors.internal();
  const known = state.bots[String(botId)];
  if (known !== undefined && known >= gen) return { reply: { marked: false } };
  return { facts: [indexFact({ type: "marked", botId, gen })], reply: { marked: true } };
};

/** A bot had nothing pending at generation `gen`: forget it unless marked since. */
const clear: IndexHandler<"clear"> = (state, args, _ctx, caller) => {
  internal(caller);
  const botId = botIdArg(args);
  const known = state.bots[String(botId)];
  if (known === undefined || known > args.gen) return { reply: { cleared: false } };
  return { facts: [indexFact({ type: "cleared", botId })], reply: { cleared: true } };
};

/** The bots that may have pending deliveries, as [{botId, gen}]. */
const pendingBots: IndexHandler<"pendingBots"> = (state, _args, _ctx, caller) => {
  internal(caller);
  return {
    reply: {
      bots: Object.entries(state.bots).map(([botId, gen]) => ({ botId: Number(botId), gen })),
    },
  };
};

function initial(ref: ActorRef): WebhookIndexState {
  return { realmId: ref.realm, bots: {} };
}

function apply(state: WebhookIndexState, fact: Obj): WebhookIndexState {
  const f = fact as unknown as WebhookIndexFact;
  if (f.type === "marked") state.bots[String(f.botId)] = f.gen;
  else if (f.type === "cleared") delete state.bots[String(f.botId)];
  return state;
}

// Snapshots written as the webhook kind's index role also hold `role: "index"`: only `bots` is read.
function fromSnapshot(data: string, ref: ActorRef): WebhookIndexState {
  const s = JSON.parse(data) as Partial<WebhookIndexState>;
  return { ...initial(ref), bots: s.bots ?? {} };
}

// Node-side only (the bots and the outgoing-webhook worker): no method is external.
export const webhookIndexBehavior = defineBehavior<WebhookIndexState, WebhookIndexProtocol>({
  kind: "webhookIndex",
  storedAs: "webhook",
  ownsKey: (key) => key === INDEX_KEY,
  protocol: webhookIndexProtocol,
  initial,
  apply,
  toSnapshot: (s) => JSON.stringify(s),
  fromSnapshot,
  handlers: handlersOf<WebhookIndexState, WebhookIndexProtocol>()({ mark, clear, pendingBots }),
});
