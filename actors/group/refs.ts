// Address of the group kind's one role: the per-realm group directory.

export { groupDirectoryRef } from "../addresses.ts";
