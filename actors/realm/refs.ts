// Address of the realm kind: one organization's realm actor.

export { realmRef } from "../addresses.ts";
