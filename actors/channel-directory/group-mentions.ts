// User group mentions in messages (feature level 333): `@*group*` mentions
// a group (its members get the `mentioned` flag), `@_*group*` names it
// silently; system groups are mentioned by their display names. The group
// directory (actors/group/mentions.ts, which calls nobody) answers for the
// names the content may mention; the renderer (markdown.ts) does the rest.

import { errors } from "../errors.ts";
import { groupDirectoryRef } from "../addresses.ts";
import type { ActorContext, Obj } from "../types.ts";
import type { MentionGroup, RenderEnv } from "../markdown/index.ts";

/** Distinct group names a message is looked up for. */
const MAX_GROUPS = 100;

/**
 * The names of `@*name*` and `@_*name*` in the content, lowercased, each
 * with whether some mention of it is not silent. A superset (code spans
 * count too). One pass: every search starts where the last one ended.
 */
export function possibleGroupMentions(content: string): Map<string, boolean> {
  const out = new Map<string, boolean>();
  let at = content.indexOf("@");
  while (at >= 0 && out.size < MAX_GROUPS) {
    const silent = content.charCodeAt(at + 1) === 0x5f; /* _ */
    const star = at + (silent ? 2 : 1);
    let next = star;
    if (content.charCodeAt(star) === 0x2a /* * */ && content.charCodeAt(star + 1) !== 0x2a) {
      const end = content.indexOf("*", star + 1);
      if (end < 0) break;
      const name = content.slice(star + 1, end);
      if (!name.includes("\n")) {
        const key = name.toLowerCase();
        out.set(key, (out.get(key) ?? false) || !silent);
      }
      next = end;
    }
    at = content.indexOf("@", next);
  }
  return out;
}

/**
 * The groups the content may mention, for `RenderEnv.groups`; with
 * `members`, the members of those mentioned non-silently too (a send).
 */
export async function mentionGroupsFor(
  ctx: ActorContext,
  realmId: number,
  content: string,
  writerId: number,
  members: boolean,
): Promise<Map<string, MentionGroup> | undefined> {
  if (!content.includes("@*") && !content.includes("@_*")) return undefined;
  const names = possibleGroupMentions(content);
  if (!names.size) return undefined;
  const r = (await ctx.call(groupDirectoryRef(realmId), "mentionGroups", {
    names: [...names.keys()],
    writerId,
    withMembers: members ? [...names].filter(([, loud]) => loud).map(([n]) => n) : [],
  })) as unknown as { groups: [string, Obj][] };
  return new Map(r.groups.map(([name, g]) => [name, g as unknown as MentionGroup]));
}

/** Zulip's check_user_group_mention_allowed, for the groups the rendering mentioned non-silently. */
export function checkGroupMentions(env: RenderEnv): void {
  for (const g of env.mentionedGroups ?? []) if (!g.canMention) throw errors.cannotMentionGroup(g.name);
}
