// Avatar URLs by avatar source (Zulip's zerver/lib/avatar.py get_avatar_field):
// "G" a gravatar of the address, "J" (feature level 466) a Jdenticon this
// server renders and serves under /user_avatars/ like an uploaded avatar.

import { gravatarUrl } from "./validate.ts";

/** Zulip's DEFAULT_AVATAR_SIZE and MEDIUM_AVATAR_SIZE, in pixels. */
export const AVATAR_SIZE = 100;
export const MEDIUM_AVATAR_SIZE = 500;

/**
 * A Jdenticon avatar's path. Zulip names a rendered avatar by a salted hash
 * of the user id and version; this server renders on request instead of
 * storing files, so the name carries the id (the icon depends only on the
 * realm's UUID and the user id, and says nothing else) and the version,
 * which changes the URL when the avatar changes. "-medium" as Zulip's
 * medium files, which clients ask for by that suffix.
 */
export function jdenticonPath(
  realmId: number,
  userId: number,
  avatarVersion: number,
  medium = false,
): string {
  return `/user_avatars/${realmId}/jdenticon/${userId}-${avatarVersion}${medium ? "-medium" : ""}.png`;
}

/** The parts of a jdenticonPath file name, or null. */
export function parseJdenticonFile(file: string): { userId: number; medium: boolean } | null {
  const m = /^(\d{1,15})-\d{1,9}(-medium)?\.png$/.exec(file);
  return m ? { userId: Number(m[1]), medium: m[2] !== undefined } : null;
}

/**
 * Zulip's Jdenticon key: the realm's UUID and the user id, so a client can
 * render the same icon from register's realm_uuid without fetching it.
 */
export function jdenticonKey(realmUuid: string, userId: number): string {
  return `${realmUuid}:${userId}`;
}

/** Zulip's generate_avatar_jdenticon options (no padding, mid lightness). */
export const JDENTICON_CONFIG = {
  padding: 0,
  lightness: { color: [0.3, 0.7], grayscale: [0.3, 0.7] },
};

export interface AvatarOwner {
  realmId: number;
  userId: number;
  /** The address the viewer may know the user by (the gravatar's). */
  email: string;
  avatarVersion: number;
  /** "G" or "J"; absent: "G". */
  avatarSource?: string;
}

/** The avatar URL (medium: Zulip's avatar_url_medium). */
export function avatarUrlOf(u: AvatarOwner, medium = false): string {
  if (u.avatarSource === "J") return jdenticonPath(u.realmId, u.userId, u.avatarVersion, medium);
  const url = gravatarUrl(u.email, u.avatarVersion);
  return medium ? `${url}&s=${MEDIUM_AVATAR_SIZE}` : url;
}

/** The medium form of an avatarUrlOf URL. */
export function mediumAvatarUrl(url: string): string {
  return isJdenticonUrl(url) ? url.replace(/\.png$/, "-medium.png") : `${url}&s=${MEDIUM_AVATAR_SIZE}`;
}

/** Whether an avatarUrlOf URL is a Jdenticon's (its avatar_source is "J"). */
export function isJdenticonUrl(url: string): boolean {
  return url.startsWith("/user_avatars/") && url.includes("/jdenticon/");
}
