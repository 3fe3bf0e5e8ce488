// The version this server reports to clients (GET /server_settings and
// POST /register). Clients gate features on the feature level: raise it
// only together with the features Zulip's changelog lists for that level.

/** Zulip's `ZULIP_VERSION`: release number plus our suffix. */
export const ZULIP_VERSION = "11.0-actors";

/** Zulip's `API_FEATURE_LEVEL`. */
export const FEATURE_LEVEL = 496;

/** Zulip's `ZULIP_MERGE_BASE`: the upstream release this follows ("" if unknown). */
export const MERGE_BASE = "11.0";
