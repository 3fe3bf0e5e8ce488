// Who hears a user's change of allow_private_data_export (Zulip 10.0,
// feature level 312's realm_export_consent event): the organization's
// administrators, who decide on exports. Internal: the user actor asks.

import { errors } from "../errors.ts";
import type { Handler } from "../types.ts";
import { activeAdminIds } from "./member-handlers.ts";
import type { RealmState } from "./state.ts";

const exportConsentAudience: Handler<RealmState> = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  return { reply: { ids: activeAdminIds(state) } };
};

export const exportConsentAudienceHandlers: Record<string, Handler<RealmState>> = { exportConsentAudience };
