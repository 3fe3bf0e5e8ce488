// Every route the gateway serves, by API area.

import type { RouteDef } from "../index.ts";
import { serverRoutes } from "./server.ts";
import { settingsRoutes } from "./settings.ts";
import { userRoutes } from "./users.ts";

export const routes: RouteDef[] = [...serverRoutes, ...userRoutes, ...settingsRoutes];
