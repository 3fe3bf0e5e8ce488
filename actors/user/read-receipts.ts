// The user's half of GET /messages/{id}/read_receipts: whether this user
// has read a message and lets others know (send_read_receipts). A leaf, for
// the conversation actor that asks every recipient in one batch.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import { FLAG_BITS, msgsOf, receivedBits } from "./flags.ts";
import { settingValue } from "./format.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "readReceipt">;

const readReceipt: Handlers["readReceipt"] = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created || settingValue(state, "send_read_receipts") === false)
    return { reply: { read: false } };
  const id = args.message_id;
  const e = msgsOf(state).entries[String(id)];
  if (e) return { reply: { read: (e[1] & FLAG_BITS.read!) !== 0 } };
  // A received row with no entry (`received`: the message is in the user's spans).
  const read = args.received && receivedBits(state, args.conv, id) !== 0;
  return { reply: { read } };
};

export const readReceiptHandlers: Handlers = { readReceipt };
