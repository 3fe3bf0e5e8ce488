// The group directory's part in user group mentions (`@*group*`, silent
// `@_*group*`; feature level 333): the mentioned groups by name, for the
// renderer (actors/channel-directory/group-mentions.ts), with the members a
// non-silent mention flags and whether the writer may mention each
// (Zulip's sender_can_mention_group).

import type { SomeHandlersOf } from "../protocol.ts";
import type { Obj } from "../types.ts";
import { EVERYONE } from "./config.ts";
import { isUserInValue, recursiveMembers } from "./graph.ts";
import type { GroupProtocol } from "./protocol.ts";
import type { GroupDirState } from "./state.ts";

type Handlers = SomeHandlersOf<GroupDirState, GroupProtocol, "mentionGroups">;

/** Names looked up per call: a message mentions few groups. */
const MAX_NAMES = 100;

/** Zulip's SystemGroups.GROUP_DISPLAY_NAME_MAP: how a system group's mention reads. */
const SYSTEM_DISPLAY_NAMES: Record<string, string> = {
  "role:nobody": "Nobody",
  "role:owners": "Owners",
  "role:administrators": "Administrators",
  "role:moderators": "Moderators",
  "role:fullmembers": "Full members",
  "role:members": "Members",
  "role:everyone": "Everyone",
  "role:internet": "Everyone on the internet",
};

/**
 * {names (any case), writerId, withMembers (lowercased names)} -> for each
 * group found, by lowercased name: its id, real and display names,
 * deactivation, the writer's right to mention it, and, for `withMembers`
 * names of active groups, its active members, subgroups included.
 */
const mentionGroups: Handlers["mentionGroups"] = (state, args) => {
  const wanted = new Set(args.names.slice(0, MAX_NAMES).map((n) => n.toLowerCase()));
  const withMembers = new Set(args.withMembers.map((n) => n.toLowerCase()));
  const groups: [string, Obj][] = [];
  for (const g of Object.values(state.groups)) {
    const key = g.name.toLowerCase();
    if (!wanted.has(key)) continue;
    const can = g.settings.can_mention_group;
    const canMention = can === EVERYONE || (can !== undefined && isUserInValue(state, can, args.writerId));
    groups.push([
      key,
      {
        id: g.id,
        name: g.name,
        display: g.isSystem ? (SYSTEM_DISPLAY_NAMES[g.name] ?? g.name) : g.name,
        deactivated: g.deactivated,
        canMention,
        ...(withMembers.has(key) && !g.deactivated ? { members: [...recursiveMembers(state, g.id)] } : {}),
      },
    ]);
  }
  return { reply: { groups } };
};

export const mentionGroupHandlers: Handlers = { mentionGroups };
