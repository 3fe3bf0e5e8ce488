// Reacting to a channel message is participation (Zulip 8.0, FL 214): it may
// follow the topic, or unmute it in a muted channel, as the reactor's
// automatic topic policies say (actors/user/auto-topics.ts). The
// conversation's `react` turn journals the reaction with one
// REACTION_PARTICIPATION hand-off, and the node calls the reactor's user
// actor (`autoTopicOnParticipation`, internal only); the reaction answers
// once that ran (replyAfterHandoffs), so a client that reads its topics
// next finds the policy. A node that dies in between gives the hand-off
// again at the conversation's next activation: the user actor keeps the
// keys of the participations that changed a policy, so a repeat changes
// nothing twice.

import { randomBytes } from "node:crypto";
import type { ZulipError } from "../errors.ts";
import { eachHandoff } from "../errors.ts";
import type { TypedCall } from "../protocol.ts";
import type { Obj } from "../types.ts";
import { userRef } from "../user/index.ts";

export const REACTION_PARTICIPATION = "reaction.participation";

/** A REACTION_PARTICIPATION hand-off: the reactor, where it reacted, and the key of the reaction. */
export interface Participation {
  realm: number;
  user: number;
  stream_id: number;
  topic: string;
  /** The reactor muted the channel. */
  channel_muted: boolean;
  /** The idempotency key, drawn by the reaction's turn. */
  key: string;
}

export function participationHandoff(
  p: Omit<Participation, "key">,
  conv: string,
): { subject: string; data: Obj } {
  const data: Participation = { ...p, key: `${conv}:${randomBytes(8).toString("hex")}` };
  return { subject: REACTION_PARTICIPATION, data: data as unknown as Obj };
}

/**
 * Run REACTION_PARTICIPATION hand-offs (one batch of reactions, in order).
 * A reactor refused for good (a Zulip error: the user is gone) is reported
 * and acknowledged; anything else has the hand-off given again.
 */
export function runParticipations(
  handoffs: Obj[],
  call: TypedCall,
  refused: (p: Participation, err: ZulipError) => void,
): Promise<boolean> {
  return eachHandoff(
    handoffs as unknown as Participation[],
    (p) =>
      call(userRef(p.realm, p.user), "autoTopicOnParticipation", {
        stream_id: p.stream_id,
        topic: p.topic,
        channel_muted: p.channel_muted,
        key: p.key,
      }),
    refused,
  );
}
