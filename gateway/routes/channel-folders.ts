// Channel folders (Zulip's zerver/views/channel_folders.py; FL 389, 414):
// parse, one call to the realm's channel directory, which holds the folders
// and checks who may change them (actors/channel-directory/folders.ts).

import { channelDirectoryRef } from "../../actors/index.ts";
import { FOLDER_DESCRIPTION_MAX, FOLDER_NAME_MAX } from "../../actors/channel-directory/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, p, param, type RouteDef, type RouteRequest } from "../index.ts";

function dir(req: RouteRequest) {
  return channelDirectoryRef(req.realmId);
}

function folderId(req: RouteRequest): number {
  const raw = req.path.channel_folder_id ?? "";
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

const createFolder = defineRoute({
  method: "POST",
  path: "/channel_folders/create",
  auth: "required",
  params: {
    description: param(p.string({ maxLength: FOLDER_DESCRIPTION_MAX }), { required: true }),
    name: param(p.string({ maxLength: FOLDER_NAME_MAX }), { required: true }),
  },
  async handler(req) {
    return await req.call(dir(req), "createChannelFolder", {
      name: req.params.name,
      description: req.params.description,
    });
  },
});

const listFolders = defineRoute({
  method: "GET",
  path: "/channel_folders",
  auth: "required",
  params: { include_archived: param(p.bool(), { default: false }) },
  async handler(req) {
    return await req.call(dir(req), "channelFolders", {
      include_archived: req.params.include_archived,
    });
  },
});

const reorderFolders = defineRoute({
  method: "PATCH",
  path: "/channel_folders",
  auth: "required",
  params: { order: param(p.intList(), { required: true }) },
  async handler(req) {
    return await req.call(dir(req), "reorderChannelFolders", { order: req.params.order });
  },
});

const updateFolder = defineRoute({
  method: "PATCH",
  path: "/channel_folders/:channel_folder_id",
  auth: "required",
  params: {
    description: param(p.string({ maxLength: FOLDER_DESCRIPTION_MAX })),
    is_archived: param(p.bool()),
    name: param(p.string({ maxLength: FOLDER_NAME_MAX })),
  },
  async handler(req) {
    return await req.call(dir(req), "updateChannelFolder", {
      id: folderId(req),
      name: req.params.name,
      description: req.params.description,
      is_archived: req.params.is_archived,
    });
  },
});

export const channelFolderRoutes: RouteDef[] = [createFolder, listFolders, reorderFolders, updateFolder];
