// Moving messages to another channel: one coordinating turn and a durable
// hand-off. Conversations never call each other, so the source's `move`
// turn decides the move (every check, which messages, how they will read)
// and journals it (`moveDecided`) with a MESSAGE_MOVE hand-off named by
// the move's id. The node then drives the rest, each step idempotent by
// that id: the target's `moveIn` (adds the messages; a repeat answers the
// first outcome), the source's `completeMove` (drops them, re-points the
// users' rows, tells; runs only while the move is pending there), and the
// Notification Bot's breadcrumbs (each a send under a key derived from the
// id). The move's reply waits for all of it (replyAfterHandoffs). A node
// that dies anywhere in between gives the hand-off again at the source's
// next activation, which finishes the move exactly once.

import { ZulipError } from "../errors.ts";
import type { ArgsOf, TypedCallAs } from "../protocol.ts";
import type { Caller, Obj } from "../types.ts";
import { postMoveBreadcrumbs, type BreadcrumbChoice, type MoveReport } from "./breadcrumbs.ts";
import type { Msg } from "./conversation-state.ts";
import type { ChannelProtocol } from "./protocol.ts";
import { channelConvRef } from "./refs.ts";

export const MESSAGE_MOVE = "message.move";

/** A decided move, as journaled in the source's hand-off. */
export interface MoveOrder {
  /** The move's id: the idempotency key of every step. */
  move: string;
  caller: Caller;
  /** The source channel. */
  from: number;
  /** The messages as they will read in the target. */
  msgs: Msg[];
  /** The source's completion (completeMove). */
  complete: ArgsOf<ChannelProtocol, "completeMove">;
  /** The breadcrumbs: what they report but `preexisting`, which the target's moveIn tells. */
  report: Omit<MoveReport, "preexisting">;
  notify: BreadcrumbChoice;
}

export function moveHandoff(order: MoveOrder): { subject: string; data: Obj } {
  return { subject: MESSAGE_MOVE, data: order as unknown as Obj };
}

/** A step refused for good (a Zulip error): the move ends where it is; anything else is tried again. */
export type MoveRefused = (order: MoveOrder, step: string, err: ZulipError) => void;

/**
 * Run MESSAGE_MOVE hand-offs (those of one batch of the source's turns, in
 * order). Resolves true once every move is complete (or refused for good),
 * false to have the hand-off given again.
 */
export async function runMoves(orders: Obj[], call: TypedCallAs, refused: MoveRefused): Promise<boolean> {
  for (const data of orders) {
    const o = data as unknown as MoveOrder;
    const realm = o.caller.realmId;
    const target = channelConvRef(realm, o.complete.stream_id);
    const source = channelConvRef(realm, o.from);
    let step = "moveIn";
    try {
      let preexisting: boolean;
      try {
        ({ preexisting } = await call(target, "moveIn", { msgs: o.msgs, move_id: o.move }, o.caller));
      } catch (err) {
        if (!(err instanceof ZulipError)) throw err;
        // The target refuses for good: the messages stay in the source, which drops the move.
        refused(o, step, err);
        step = "completeMove";
        await call(source, "completeMove", { ...o.complete, ids: [] }, o.caller);
        continue;
      }
      step = "completeMove";
      await call(source, "completeMove", o.complete, o.caller);
      step = "breadcrumbs";
      await postMoveBreadcrumbs(call, o.caller, { ...o.report, preexisting }, o.notify, o.move);
    } catch (err) {
      if (!(err instanceof ZulipError)) return false;
      refused(o, step, err);
    }
  }
  return true;
}
