// GET /users/{user_id}/channels (Zulip 12, feature level 440). Logic in
// actors/channel-directory/user-channels.ts.

import { channelDirectoryRef } from "../../actors/index.ts";
import { defineRoute, type RouteDef } from "../index.ts";
import { pathInt } from "./messages.ts";

const userChannels = defineRoute({
  method: "GET",
  path: "/users/:user_id/channels",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(channelDirectoryRef(req.realmId), "userChannels", {
      user_id: pathInt(req, "user_id"),
    });
  },
});

export const userChannelRoutes: RouteDef[] = [userChannels];
