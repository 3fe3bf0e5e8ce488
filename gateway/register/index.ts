// Every area that contributes to POST /register's initial state. Add one
// line per area module.
import type { RegisterArea } from "./types.ts";

export const registerAreas: RegisterArea[] = [];
