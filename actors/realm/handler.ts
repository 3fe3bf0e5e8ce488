// The realm kind's handler type. Apart from protocol.ts because it names
// the realm's state, whose module imports the handler files: protocol.ts
// stays a leaf that actors/addresses.ts may import.

import type { HandlerOf, MethodOf } from "../protocol.ts";
import type { RealmProtocol } from "./protocol.ts";
import type { RealmState } from "./state.ts";

/** A handler of the realm kind's method M (its argument and reply types from the protocol). */
export type RealmHandler<M extends MethodOf<RealmProtocol>> = HandlerOf<RealmState, RealmProtocol, M>;
