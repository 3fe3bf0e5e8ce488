// Channel folders (Zulip's zerver/views/channel_folders.py; FL 389, 414):
// parse, one call to the realm's channel directory, which holds the folders
// and checks who may change them (actors/channel-directory/folders.ts).

import { channelDirectoryRef } from "../../actors/index.ts";
import { FOLDER_DESCRIPTION_MAX, FOLDER_NAME_MAX } from "../../actors/channel-directory/index.ts";
import { errors } from "../../actors/errors.ts";
import { p, param, type RouteDef, type RouteRequest } from "../index.ts";

function dir(req: RouteRequest) {
  return channelDirectoryRef(req.realmId);
}

function folderId(req: RouteRequest): number {
  const raw = req.path.channel_folder_id ?? "";
  if (!/^\d{1,15}$/.test(raw)) throw errors.noSuchRoute();
  return Number(raw);
}

const createFolder: RouteDef = {
  method: "POST",
  path: "/channel_folders/create",
  auth: "required",
  params: {
    description: param(p.string({ maxLength: FOLDER_DESCRIPTION_MAX }), { required: true }),
    name: param(p.string({ maxLength: FOLDER_NAME_MAX }), { required: true }),
  },
  async handler(req) {
    return await req.call(dir(req), "createChannelFolder", {
      name: req.params.name as string,
      description: req.params.description as string,
    });
  },
};

const listFolders: RouteDef = {
  method: "GET",
  path: "/channel_folders",
  auth: "required",
  params: { include_archived: param(p.bool(), { default: false }) },
  async handler(req) {
    return await req.call(dir(req), "channelFolders", {
      include_archived: req.params.include_archived as boolean,
    });
  },
};

const reorderFolders: RouteDef = {
  method: "PATCH",
  path: "/channel_folders",
  auth: "required",
  params: { order: param(p.intList(), { required: true }) },
  async handler(req) {
    return await req.call(dir(req), "reorderChannelFolders", { order: req.params.order as number[] });
  },
};

const updateFolder: RouteDef = {
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
      name: req.params.name as string | undefined,
      description: req.params.description as string | undefined,
      is_archived: req.params.is_archived as boolean | undefined,
    });
  },
};

export const channelFolderRoutes: RouteDef[] = [createFolder, listFolders, reorderFolders, updateFolder];
