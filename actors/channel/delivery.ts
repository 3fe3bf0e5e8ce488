// Delivering a sent message to its recipients' user actors (their flags:
// the UserMessage rows of Zulip). The send journals the message and one
// durable hand-off (Decision.handoffs, subject MESSAGE_DELIVERY) in the
// same append; the node then calls every recipient's `receiveMessages`
// (idempotent; a batch of sends makes one call per recipient), and the send's reply waits for that (replyAfterHandoffs),
// so a client sees its recipients' flags stored once it has the message id.
// The same turn of a user actor sets the send's automatic topic policies
// (the sender's follow or unmute, the follows of those it mentions).
// The conversation actor does not wait: it decides the next sends while
// the deliveries run, and a node that dies in between gives the hand-off
// again at the conversation's next activation.
import type { TypedCall } from "../protocol.ts";
import type { Obj } from "../types.ts";
import { userRef, type Delivery } from "../user/index.ts";

export const MESSAGE_DELIVERY = "message.deliver";

/**
 * The hand-off of one message: the recipients, and for each flag the
 * recipients that get it (most get none, so this stays small).
 */
export function deliveryHandoff(
  realm: number,
  message: [id: number, conv: string, topic: string, sender: number],
  perUser: Map<number, string[]>,
  auto?: SendAutoTopic,
): { subject: string; data: Obj } {
  const flagged: Record<string, number[]> = {};
  for (const [uid, flags] of perUser) for (const f of flags) (flagged[f] ??= []).push(uid);
  return {
    subject: MESSAGE_DELIVERY,
    data: {
      realm,
      message,
      users: [...perUser.keys()],
      flagged,
      ...(auto ? { auto } : {}),
    } as unknown as Obj,
  };
}

/** A human's channel send: its automatic topic policies, set with the rows (actors/user/auto-topics.ts). */
export interface SendAutoTopic {
  /** The send starts its topic. */
  initiated: boolean;
  /** The sender muted the channel. */
  channel_muted: boolean;
  /** The active humans it personally mentions. */
  mentioned: number[];
}

/**
 * Run MESSAGE_DELIVERY hand-offs (those of one batch of sends, in order):
 * one `receiveMessages` per recipient with every message of the batch it
 * gets, all recipients at once.
 */
export async function deliverMessages(handoffs: Obj[], call: TypedCall): Promise<boolean> {
  const perUser = new Map<
    string,
    { realm: number; uid: number; items: Delivery[]; own: [number, boolean, boolean][]; follows: number[] }
  >();
  for (const data of handoffs) {
    const realm = data.realm as number;
    const [id, conv, topic, sender] = data.message as [number, string, string, number];
    const flags = new Map<number, string[]>();
    for (const [f, uids] of Object.entries((data.flagged ?? {}) as Record<string, number[]>))
      for (const uid of uids) {
        const list = flags.get(uid);
        if (list) list.push(f);
        else flags.set(uid, [f]);
      }
    for (const uid of data.users as number[]) {
      const key = `${realm}:${uid}`;
      let u = perUser.get(key);
      if (u === undefined) perUser.set(key, (u = { realm, uid, items: [], own: [], follows: [] }));
      u.items.push([id, conv, flags.get(uid) ?? [], topic, sender]);
      const auto = data.auto as unknown as SendAutoTopic | undefined;
      if (auto === undefined) continue;
      if (uid === sender) u.own.push([id, auto.initiated, auto.channel_muted]);
      else if (auto.mentioned.includes(uid)) u.follows.push(id);
    }
  }
  await Promise.all(
    [...perUser.values()].map((u) =>
      call(userRef(u.realm, u.uid), "receiveMessages", {
        items: u.items,
        ...(u.own.length ? { own: u.own } : {}),
        ...(u.follows.length ? { mention_follows: u.follows } : {}),
      }),
    ),
  );
  return true;
}
