// /register fetch type "channel_folders" (FL 389): the realm's channel
// folders, archived ones included, in their order.

import { channelDirectoryRef } from "../../actors/index.ts";
import type { Obj } from "../../actors/types.ts";
import type { RegisterArea } from "./types.ts";

export const channelFoldersArea: RegisterArea = {
  fetchTypes: ["channel_folders"],
  async fetch(ctx): Promise<Obj> {
    if (!ctx.caller) return {};
    return await ctx.call(channelDirectoryRef(ctx.realmId), "registerChannelFolders", {});
  },
};
