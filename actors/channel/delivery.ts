// Delivering a sent message to its recipients' user actors (their flags:
// the UserMessage rows of Zulip). The send journals the message and one
// durable hand-off (Decision.handoffs, subject MESSAGE_DELIVERY) in the
// same append; the node then calls every recipient's `receiveMessages`
// (idempotent), and the send's reply waits for that (replyAfterHandoffs),
// so a client sees its recipients' flags stored once it has the message id.
// The conversation actor does not wait: it decides the next sends while
// the deliveries run, and a node that dies in between gives the hand-off
// again at the conversation's next activation.
import type { Obj, Value } from "../types.ts";
import { userRef } from "../user/index.ts";
import type { ActorRef } from "../types.ts";

export const MESSAGE_DELIVERY = "message.deliver";

/**
 * The hand-off of one message: the recipients, and for each flag the
 * recipients that get it (most get none, so this stays small).
 */
export function deliveryHandoff(
  realm: number,
  message: [id: number, conv: string, topic: string, sender: number],
  perUser: Map<number, string[]>,
): { subject: string; data: Obj } {
  const flagged: Record<string, number[]> = {};
  for (const [uid, flags] of perUser) for (const f of flags) (flagged[f] ??= []).push(uid);
  return {
    subject: MESSAGE_DELIVERY,
    data: { realm, message, users: [...perUser.keys()], flagged } as unknown as Obj,
  };
}

/** Run a MESSAGE_DELIVERY hand-off: one `receiveMessages` per recipient, all at once. */
export async function deliverMessage(
  data: Obj,
  call: (ref: ActorRef, method: string, args: Obj) => Promise<unknown>,
): Promise<boolean> {
  const realm = data.realm as number;
  const [id, conv, topic, sender] = data.message as [number, string, string, number];
  const flags = new Map<number, string[]>();
  for (const [f, uids] of Object.entries((data.flagged ?? {}) as Record<string, number[]>))
    for (const uid of uids) {
      const list = flags.get(uid);
      if (list) list.push(f);
      else flags.set(uid, [f]);
    }
  await Promise.all(
    (data.users as number[]).map((uid) =>
      call(userRef(realm, uid), "receiveMessages", {
        items: [[id, conv, (flags.get(uid) ?? []) as Value, topic, sender]] as unknown as Value,
      }),
    ),
  );
  return true;
}
