// System groups and the per-setting rules of group-setting values
// (Zulip's SystemGroups, NamedUserGroup.GROUP_PERMISSION_SETTINGS and
// Realm.REALM_PERMISSION_GROUP_SETTINGS).

/**
 * System groups have fixed ids in every realm, in Zulip's creation order,
 * so defaults of realm and channel settings are constants. User-created
 * groups get ids above SYSTEM_GROUP_COUNT from the realm's "group" counter.
 */
export const SYSTEM_GROUPS = [
  { id: 1, name: "role:nobody", description: "Nobody" },
  { id: 2, name: "role:owners", description: "Owners of this organization" },
  {
    id: 3,
    name: "role:administrators",
    description: "Administrators of this organization, including owners",
  },
  {
    id: 4,
    name: "role:moderators",
    description: "Moderators of this organization, including administrators",
  },
  {
    id: 5,
    name: "role:fullmembers",
    description: "Members of this organization, not including new accounts and guests",
  },
  { id: 6, name: "role:members", description: "Members of this organization, not including guests" },
  { id: 7, name: "role:everyone", description: "Everyone in this organization, including guests" },
  { id: 8, name: "role:internet", description: "Everyone on the Internet" },
] as const;

export const SYSTEM_GROUP_COUNT = SYSTEM_GROUPS.length;

export const SYSTEM_GROUP_ID: Record<string, number> = Object.fromEntries(
  SYSTEM_GROUPS.map((g) => [g.name, g.id]),
);

export const NOBODY = 1;
export const OWNERS = 2;
export const ADMINISTRATORS = 3;
export const MODERATORS = 4;
export const FULL_MEMBERS = 5;
export const MEMBERS = 6;
export const EVERYONE = 7;
export const INTERNET = 8;

/** The system group a role puts a user in directly (Zulip's SYSTEM_USER_GROUP_ROLE_MAP). */
export const ROLE_GROUP: Record<number, number> = {
  100: OWNERS,
  200: ADMINISTRATORS,
  300: MODERATORS,
  400: MEMBERS,
  600: EVERYONE,
};

export interface SettingRules {
  allowEveryone: boolean;
  allowInternet?: boolean;
  allowNobody?: boolean;
  /** Zulip's allow_owners_group=False (the spec: can_mention_group is never role:owners). */
  allowOwners?: boolean;
  systemGroupsOnly?: boolean;
  /** When set, a system group must be one of these names. */
  allowedSystemGroups?: string[];
}

/** A setting's rules and its default: a system group id, or "creator" (an object with the creator). */
export interface SettingConfig extends SettingRules {
  default: number | "creator";
}

/** The six settings of a user group; every one is role:nobody on system groups. */
export const GROUP_SETTINGS: Record<string, SettingConfig> = {
  can_add_members_group: { allowEveryone: false, default: "creator" },
  can_join_group: { allowEveryone: false, default: NOBODY },
  can_leave_group: { allowEveryone: true, default: EVERYONE },
  can_manage_group: { allowEveryone: false, default: "creator" },
  can_mention_group: { allowEveryone: true, allowOwners: false, default: EVERYONE },
  can_remove_members_group: { allowEveryone: false, default: NOBODY },
};

export const GROUP_SETTING_NAMES = Object.keys(GROUP_SETTINGS);

/** The realm's group-valued settings, with Zulip's rules and defaults. */
export const REALM_GROUP_SETTINGS: Record<string, SettingConfig & { ownerOnly?: boolean }> = {
  can_access_all_users_group: {
    allowEveryone: true,
    allowNobody: false,
    systemGroupsOnly: true,
    allowedSystemGroups: ["role:everyone", "role:members"],
    default: EVERYONE,
  },
  can_add_custom_emoji_group: { allowEveryone: false, default: MEMBERS },
  can_add_subscribers_group: { allowEveryone: false, default: MEMBERS },
  can_create_bots_group: { allowEveryone: false, default: MEMBERS },
  can_create_groups: { allowEveryone: false, default: MEMBERS, ownerOnly: true },
  can_create_private_channel_group: { allowEveryone: false, default: MEMBERS },
  can_create_public_channel_group: { allowEveryone: false, default: MEMBERS },
  can_create_web_public_channel_group: {
    allowEveryone: false,
    systemGroupsOnly: true,
    allowedSystemGroups: ["role:moderators", "role:administrators", "role:owners", "role:nobody"],
    default: OWNERS,
  },
  can_create_write_only_bots_group: { allowEveryone: false, default: MEMBERS },
  can_delete_any_message_group: { allowEveryone: false, default: ADMINISTRATORS },
  can_delete_own_message_group: { allowEveryone: true, default: EVERYONE },
  can_invite_users_group: { allowEveryone: false, default: MEMBERS, ownerOnly: true },
  can_manage_all_groups: { allowEveryone: false, allowNobody: false, default: OWNERS, ownerOnly: true },
  can_manage_billing_group: {
    allowEveryone: false,
    allowNobody: false,
    default: ADMINISTRATORS,
    ownerOnly: true,
  },
  can_mention_many_users_group: { allowEveryone: true, default: ADMINISTRATORS },
  can_move_messages_between_channels_group: { allowEveryone: false, default: MEMBERS },
  can_move_messages_between_topics_group: { allowEveryone: true, default: EVERYONE },
  can_resolve_topics_group: { allowEveryone: true, default: EVERYONE },
  can_set_delete_message_policy_group: { allowEveryone: false, default: MODERATORS },
  can_set_topics_policy_group: { allowEveryone: true, default: MEMBERS },
  can_summarize_topics_group: { allowEveryone: true, default: EVERYONE },
  create_multiuse_invite_group: { allowEveryone: false, default: ADMINISTRATORS, ownerOnly: true },
  direct_message_initiator_group: { allowEveryone: true, default: EVERYONE },
  direct_message_permission_group: { allowEveryone: true, default: EVERYONE },
};

export const REALM_GROUP_SETTING_NAMES = Object.keys(REALM_GROUP_SETTINGS);

export const GROUP_NAME_MAX = 100;
/** Zulip's NamedUserGroup.INVALID_NAME_PREFIXES. */
export const INVALID_NAME_PREFIXES = ["@", "role:", "user:", "stream:", "channel:"];
