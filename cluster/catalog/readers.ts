// Readers (Behavior.readers): methods decided beside the mailbox, against
// the committed view of the state, a few of one activation at once.

import type { Behavior, Caller, Decision, Obj, Origin, TurnReply } from "../../actors/types.ts";
import { MovedError, UnavailableError } from "../runtime-errors.ts";
import { metrics } from "../metrics.ts";
import { decide, type Activation, type CatalogCore, type Turn } from "./core.ts";

/**
 * A Behavior.readers method: decided at once, beside the mailbox, against
 * the committed view (Activation.committed): never behind the writer's
 * turns, never forcing its batch to commit, never seeing a fact that is
 * not durable yet. A send acknowledged before the read began is in that
 * view, since a batch's replies go out only after its facts are applied
 * to it.
 */
export function read(
  c: CatalogCore,
  act: Activation,
  behavior: Behavior<unknown>,
  method: string,
  args: Obj,
  caller: Caller | null,
  deadline: number,
  traceparent?: string,
  origin?: Origin,
): Promise<TurnReply> {
  if ((act.reading ?? 0) + (act.readWaiting?.length ?? 0) >= c.mailboxLimit) {
    metrics.rejected("mailbox");
    return Promise.reject(new UnavailableError(`readers of ${act.id} are too many`, 1));
  }
  return new Promise<TurnReply>((resolve, reject) => {
    const turn: Turn = { method, args, caller, deadline, resolve, reject };
    if (traceparent !== undefined) turn.trace = traceparent;
    if (origin === "external") turn.origin = origin;
    // The first committed view is a copy of the state, taken while no batch is ahead of the store.
    if (!mayRead(act) || act.readWaiting || (act.reading ?? 0) >= c.readersPerActivation)
      (act.readWaiting ??= []).push(turn);
    else void runReader(c, act, behavior, turn);
  });
}

/** A deep copy of the activation's state: the snapshot encoding's (it leaves out caches). */
export function copyState(behavior: Behavior<unknown>, act: Activation): unknown {
  return behavior.fromSnapshot(behavior.toSnapshot(act.state), act.ref);
}

/** Start the readers that waited for the activation to load or for its batch to be durable. */
export function flushReaders(c: CatalogCore, act: Activation): void {
  const waiting = act.readWaiting;
  if (waiting === undefined || !mayRead(act)) return;
  const behavior = c.o.behaviors[act.ref.kind]!;
  while (waiting.length && (act.reading ?? 0) < c.readersPerActivation)
    void runReader(c, act, behavior, waiting.shift()!);
  if (!waiting.length) act.readWaiting = undefined;
}

/** A reader may start now (below the bound, it waits only for these). */
function mayRead(act: Activation): boolean {
  return act.ready && !(act.committed === undefined && act.ahead);
}

async function runReader(
  c: CatalogCore,
  act: Activation,
  behavior: Behavior<unknown>,
  turn: Turn,
): Promise<void> {
  if (act.dead) {
    turn.reject(new MovedError(act.shard));
    return;
  }
  act.committed ??= copyState(behavior, act);
  act.reading = (act.reading ?? 0) + 1;
  let decision: Decision | null;
  try {
    decision = await decide(c, act, behavior, turn, act.committed);
  } finally {
    act.reading = act.reading! - 1;
    act.lastUsed = c.now();
    flushReaders(c, act);
  }
  if (decision === null) return;
  if (
    decision.facts?.length ||
    decision.writes?.length ||
    decision.events?.length ||
    decision.notices?.length ||
    decision.handoffs?.length ||
    decision.park !== undefined ||
    decision.wake?.length ||
    decision.again !== undefined
  ) {
    // A method declared a reader that decided a change: a bug, refused rather than half done.
    turn.reject(new Error(`${act.ref.kind}.${turn.method} is a reader but decided a change`));
    return;
  }
  // The activation was fenced while the read ran: the caller asks the shard's next owner.
  if (act.dead) turn.reject(new MovedError(act.shard));
  else turn.resolve(decision.replyJson ?? decision.reply ?? null);
}
