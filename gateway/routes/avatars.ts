// Jdenticon avatars (avatar source "J", feature level 466), served where
// Zulip serves rendered avatars: /user_avatars/<realm>/... . Public as
// Zulip's avatar files (no credentials), only under the realm's own host.
// An icon is a pure function of the realm's UUID, the user id and the size,
// so it is rendered on request and the bytes kept in a bounded cache.

import { LRUCache } from "lru-cache";
import { realmRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import {
  AVATAR_SIZE,
  JDENTICON_CONFIG,
  MEDIUM_AVATAR_SIZE,
  jdenticonKey,
  parseJdenticonFile,
} from "../../actors/user/avatar.ts";
import { defineRoute, RawReply, type RouteDef } from "../index.ts";
import { realmUuid } from "./push-relay.ts";

/** Bounded by bytes: a 100 px icon weighs a few KiB, a 500 px one some more. */
const rendered = new LRUCache<string, Buffer>({
  max: 1000,
  maxSize: 16 * 1024 * 1024,
  sizeCalculation: (b) => b.length,
});

const jdenticon = defineRoute({
  method: "GET",
  prefix: "",
  path: "/user_avatars/:realm_id/jdenticon/:file",
  auth: "none",
  params: {},
  async handler(req) {
    const f = parseJdenticonFile(req.path.file ?? "");
    if (!f || req.path.realm_id !== String(req.realmId)) throw errors.noSuchRoute();
    const info = await req.call(realmRef(req.realmId), "publicInfo", {});
    // The UUID register reports (gateway/register/realm.ts), so a client's
    // local rendering matches this one.
    const uuid = realmUuid(`${req.scheme}://${info.host || process.env.EXTERNAL_HOST || req.host}`);
    const size = f.medium ? MEDIUM_AVATAR_SIZE : AVATAR_SIZE;
    const key = `${jdenticonKey(uuid, f.userId)}:${size}`;
    let png = rendered.get(key);
    if (png === undefined) {
      // Loaded at the first generated avatar, not at every start.
      const { toPng } = await import("jdenticon");
      png = toPng(jdenticonKey(uuid, f.userId), size, JDENTICON_CONFIG);
      rendered.set(key, png);
    }
    return new RawReply(png, "image/png", {
      // The URL names the avatar version: a changed avatar gets a new URL.
      "cache-control": "public, max-age=31536000, immutable",
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; img-src 'self'",
    });
  },
});

export const avatarRoutes: RouteDef[] = [jdenticon];
