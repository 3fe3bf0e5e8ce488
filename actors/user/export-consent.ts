// A user's consent to private data exports (the allow_private_data_export
// setting), read for GET /export/realm/consents by an administrator of the
// user's own organization.

import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import { isAdminRole } from "./validate.ts";
import type { UserProtocol } from "./protocol.ts";
import type { UserState } from "./state.ts";

type Handlers = SomeHandlersOf<UserState, UserProtocol, "exportConsent">;

const exportConsent: Handlers["exportConsent"] = (state, _args, _ctx, caller) => {
  if (!caller || caller.realmId !== state.realmId || !isAdminRole(caller.role)) throw errors.mustBeAdmin();
  if (!state.created) throw errors.noSuchUser();
  return { reply: { user_id: state.userId, consented: state.settings.allow_private_data_export === true } };
};

export const exportConsentHandlers: Handlers = { exportConsent };
