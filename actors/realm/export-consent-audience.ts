// Who hears a user's change of allow_private_data_export (Zulip 10.0,
// feature level 312's realm_export_consent event): the organization's
// administrators, who decide on exports. Internal: the user actor asks.

import { errors } from "../errors.ts";
import { activeAdminIds } from "./member-helpers.ts";
import type { RealmHandler } from "./handler.ts";

const exportConsentAudience: RealmHandler<"exportConsentAudience"> = (state, _args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  return { reply: { ids: activeAdminIds(state) } };
};

export const exportConsentAudienceHandlers = { exportConsentAudience };
