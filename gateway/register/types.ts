// The contract for POST /register's initial state: one module per API area
// (gateway/register/<area>.ts) contributes the keys it owns, like Zulip's
// fetch_initial_state_data. The register route (gateway/routes/events.ts)
// calls every area whose eventTypes intersect fetch_event_types (or all when
// none are given) and merges the objects they return.
import type { Caller, Obj } from "../../actors/types.ts";
import type { TypedCall } from "../../actors/protocol.ts";

export interface RegisterParams {
  apply_markdown: boolean;
  client_gravatar: boolean;
  include_subscribers: "true" | "false" | "partial";
  slim_presence: boolean;
  presence_history_limit_days: number | null;
  all_public_streams: boolean;
  client_capabilities: Record<string, boolean>;
  narrow: [string, string][];
}

export interface RegisterContext {
  /** Null for an unauthenticated (spectator) register. */
  caller: Caller | null;
  realmId: number;
  host: string;
  scheme: string;
  params: RegisterParams;
  call: TypedCall;
}

export interface RegisterArea {
  /** Zulip event/fetch types this area serves, e.g. ["realm_user"], ["user_settings"]. */
  fetchTypes: string[];
  fetch(ctx: RegisterContext): Promise<Obj>;
}
