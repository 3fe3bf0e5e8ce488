// The node's registration seam: what the domain's wiring
// (cluster/compose/domain.ts) and the node's workers register, and how the
// catalog's hooks reach them. The runtime itself names no actor kind: a
// kind's part beyond its turns (KindHooks), the hand-off subjects, the node
// services and where events go are all registered here.

import type { ActorRef, Obj, OutEvent, Value } from "../../actors/types.ts";
import type { Activation, Handoff, SideFact } from "../catalog.ts";
import type { ActorRequest } from "../transport/contract.ts";

export type EventListener = (ref: ActorRef, events: OutEvent[]) => void;
/**
 * A Decision.handoffs handler: the data of every hand-off of its subject in
 * one journaled batch, in order; `key` names the outbox entry (null when
 * not journaled).
 */
export type HandoffHandler = (data: Obj[], key: string | null) => Promise<boolean>;

/** Where emitted events go (NodeRuntime.routeEvents); resolves true once every recipient has them. */
export type EventRoute = (ref: ActorRef, events: OutEvent[], key: string | null) => Promise<boolean>;

/**
 * The node's part in the actors of one kind beyond running their turns
 * (NodeRuntime.onKind); the domain's wiring registers it
 * (cluster/compose/domain.ts).
 */
export interface KindHooks {
  /**
   * An activation that speaks for its shard (the current one, at the
   * shard's epoch) has its state loaded, or a batch of its facts durable
   * (CatalogHooks.settled).
   */
  settled?(act: Activation): void;
  /** A batch is about to be appended; the append waits for the promise (CatalogHooks.beforeAppend). */
  beforeAppend?(act: Activation, facts: readonly Obj[]): Promise<void> | undefined;
  /** Where the kind's side log is kept (Behavior.sideLog). */
  sideLog?: SideLogSource;
}

/** A kind's side log (Behavior.sideLog), kept outside its actors' journals. */
export interface SideLogSource {
  /** The activation's facts after `after`, for its replay (CatalogHooks.sideFacts). */
  replay(act: Activation, after: number): Promise<SideFact[]>;
  /** For a turn (ctx.sideLog): the facts after `after`, up to `upTo`. */
  facts(act: Activation, after: number, upTo?: number): Promise<Obj[]>;
  /** For a turn (ctx.sideLogNow): the facts after `after`, up to `upTo`, when all can be had now; else null. */
  factsNow(act: Activation, after: number, upTo?: number): Obj[] | null;
  /** For a turn (ctx.sideLogHead): the position of the last entry for the actor (0: none). */
  head(act: Activation): number;
  /** The store holds the activation's state up to `position` of the log (CatalogHooks.sideSaved). */
  saved(act: Activation, position: number): void;
}

/**
 * A node-side service addressed like an actor (NodeRuntime.addService):
 * the requests to the refs it owns are answered by it, never by an
 * activation, and only from inside the cluster.
 */
export interface NodeService {
  owns(ref: ActorRef): boolean;
  receive(req: ActorRequest): Promise<Value>;
}

/** What is registered on one node (NodeRuntime's `on…` methods fill it). */
export class NodeHooks {
  readonly listeners: EventListener[] = [];
  readonly noticeListeners: ((subject: string, data: Obj) => void)[] = [];
  readonly handoffHandlers = new Map<string, HandoffHandler>();
  readonly acquiredListeners: ((shard: number) => void)[] = [];
  readonly leftListeners: ((shard: number) => void)[] = [];
  readonly kinds = new Map<string, KindHooks>();
  readonly services: NodeService[] = [];
  eventRoute: EventRoute | null = null;

  /** Events whose facts are durable (CatalogHooks.emit): to the listeners, then on their route. */
  emit(ref: ActorRef, events: OutEvent[], key: string | null): Promise<boolean> {
    for (const l of this.listeners) l(ref, events);
    // A node nobody routes events for (unit tests of the runtime) drops them.
    return this.eventRoute === null ? Promise.resolve(true) : this.eventRoute(ref, events, key);
  }

  /** A batch's hand-offs (CatalogHooks.handoff), each subject's to its handler. */
  async handoff(handoffs: Handoff[], key: string | null): Promise<boolean> {
    // Each subject's handler gets the batch's hand-offs of it at once;
    // acknowledged once every handler acknowledged. A subject nobody
    // handles stays in the outbox (given again at the emitter's next
    // activation).
    const bySubject = new Map<string, Obj[]>();
    for (const h of handoffs) {
      const list = bySubject.get(h.subject);
      if (list) list.push(h.data);
      else bySubject.set(h.subject, [h.data]);
    }
    const oks = await Promise.all(
      [...bySubject].map(([subject, data]) => {
        const handler = this.handoffHandlers.get(subject);
        return handler ? handler(data, key).catch(() => false) : false;
      }),
    );
    return oks.every(Boolean);
  }

  /** The side log of an activation's kind (KindHooks.sideLog), if it has one. */
  sideLogOf(act: Activation): SideLogSource | undefined {
    return this.kinds.get(act.ref.kind)?.sideLog;
  }

  /** The service that owns `ref`, if any. */
  serviceOf(ref: ActorRef): NodeService | undefined {
    for (const s of this.services) if (s.owns(ref)) return s;
    return undefined;
  }
}
