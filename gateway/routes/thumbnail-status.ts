// GET /thumbnail/status/{realm_id_str}/{filename} (Zulip 11, feature level
// 479): whether an uploaded image's thumbnails are ready, so a client that
// just uploaded it knows when to show the preview. As Zulip's
// check_thumbnail_status: only the file's owner may ask, and a file that is
// not a thumbnailed image, or anyone else's, is "Invalid attachment".

import { uploadsDirectoryRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, type RouteDef } from "../index.ts";

const thumbnailStatus = defineRoute({
  method: "GET",
  path: "/thumbnail/status/:realm_id_str/*",
  auth: "required",
  params: {},
  async handler(req) {
    const realm = req.path.realm_id_str ?? "";
    const rest = req.path["*"] ?? "";
    if (!/^\d{1,15}$/.test(realm) || Number(realm) !== req.realmId || rest === "") {
      throw errors.invalidAttachment();
    }
    const info = await req.call(uploadsDirectoryRef(req.realmId), "lookupUpload", {
      pathId: `${realm}/${rest}`,
    });
    if (!info || info.ownerId !== req.caller!.userId || info.isImage !== true)
      throw errors.invalidAttachment();
    // Every thumbnail is made while the upload request runs, before the
    // file is recorded: a recorded image has them all.
    return { has_thumbnail: true };
  },
});

export const thumbnailStatusRoutes: RouteDef[] = [thumbnailStatus];
