// A read for POST /register's realm area (gateway/register/realm.ts): the
// realm settings this actor holds, with defaults filled in. Calls nobody.

import { errors } from "../errors.ts";
import type { Obj } from "../types.ts";
import { REALM_SETTING_DEFAULTS, realmSetting } from "./defaults.ts";
import type { RealmHandler } from "./handler.ts";

const registerRealmState: RealmHandler<"registerRealmState"> = (state) => {
  if (!state.created) throw errors.invalidSubdomain();
  const settings: Obj = {};
  for (const name of new Set([...Object.keys(REALM_SETTING_DEFAULTS), ...Object.keys(state.settings)])) {
    settings[name] = realmSetting(state, name);
  }
  // Zulip's deprecated realm_allow_edit_history, derived from the policy that replaced it.
  settings.allow_edit_history = settings.message_edit_history_visibility_policy !== "none";
  // Zulip's deprecated realm_mandatory_topics (FL 392), derived from topics_policy.
  settings.mandatory_topics = settings.topics_policy === "disable_empty_topic";
  // register's realm_description is the Markdown source, as realm update events carry it.
  settings.description = state.description;
  return { reply: { settings, dateCreated: state.dateCreated } };
};

export const realmRegisterHandlers = { registerRealmState };
