// A user's consent to private data exports (the allow_private_data_export
// setting), read for GET /export/realm/consents by an administrator of the
// user's own organization.

import { errors } from "../errors.ts";
import type { Handler } from "../types.ts";
import { isAdminRole } from "./index.ts";
import type { UserState } from "./state.ts";

const exportConsent: Handler<UserState> = (state, _args, _ctx, caller) => {
  if (!caller || caller.realmId !== state.realmId || !isAdminRole(caller.role)) throw errors.mustBeAdmin();
  if (!state.created) throw errors.noSuchUser();
  return { reply: { user_id: state.userId, consented: state.settings.allow_private_data_export === true } };
};

export const exportConsentHandlers: Record<string, Handler<UserState>> = { exportConsent };
