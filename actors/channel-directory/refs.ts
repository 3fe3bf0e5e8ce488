// Address of the channel directory kind's one actor per realm.

export { channelDirectoryRef } from "../addresses.ts";
