// The realm kind's door: siblings import only from here.

export { realmBehavior } from "./behavior.ts";
export { REALM_SETTING_DEFAULTS } from "./defaults.ts";
export { AUTH_ATTEMPTS_MAX, AUTH_WINDOW_MS } from "./rate-limit.ts";
export { applyLinkifiers } from "./linkifiers.ts";
export { FIELD_TYPES } from "./profile-fields.ts";
export { directoryRef, realmRef } from "./refs.ts";
export type { DirEntry, DirectoryState, RealmKindState, RealmState } from "./state.ts";
