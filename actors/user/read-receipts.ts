// The user's half of GET /messages/{id}/read_receipts: whether this user
// has read a message and lets others know (send_read_receipts). A leaf, for
// the conversation actor that asks every recipient in one batch.

import { errors } from "../errors.ts";
import type { Handler } from "../types.ts";
import { FLAG_BITS, msgsOf } from "./flags.ts";
import { settingValue } from "./format.ts";
import type { UserState } from "./state.ts";

const readReceipt: Handler<UserState> = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created || settingValue(state, "send_read_receipts") === false)
    return { reply: { read: false } };
  const e = msgsOf(state).entries[String(args.message_id)];
  return { reply: { read: e !== undefined && (e[1] & FLAG_BITS.read!) !== 0 } };
};

export const readReceiptHandlers: Record<string, Handler<UserState>> = { readReceipt };
