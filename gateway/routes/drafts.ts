// Drafts (Zulip's zerver/views/drafts.py): parse, one call to the caller's
// user actor, reply. The shape of each draft is checked here as Zulip's
// pydantic DraftData does; the rest (content, timestamp, recipients) in
// actors/user/drafts.ts.

import { userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import type { DraftIn } from "../../actors/user/index.ts";
import {
  c,
  defineRoute,
  p,
  param,
  type Checker,
  type Parser,
  type RouteDef,
  type RouteRequest,
} from "../index.ts";

/** RequiredStringConstraint: stripped, then at least one character. */
const requiredString: Checker<string> = (v, name) => {
  if (typeof v !== "string") throw errors.notString(name);
  const s = v.trim();
  if (s.length === 0) throw errors.cannotBeBlank(name);
  return s;
};

/**
 * `int | float | None`, strict: pydantic names the first union member that
 * failed in the path. JSON's 1e400 is a Python float inf; it goes on as the
 * largest finite number of its sign (JSON between processes has no inf), so
 * the actor still answers what Zulip's checks would.
 */
const timestamp: Checker<number | null> = (v, name) => {
  if (v === null) return null;
  if (typeof v !== "number") throw errors.notInteger(`${name}["int"]`);
  if (v === Infinity) return Number.MAX_VALUE;
  if (v === -Infinity) return -Number.MAX_VALUE;
  return v;
};

const draftChecker = c.dict<Required<DraftIn>>({
  type: { check: c.oneOf(["private", "stream", ""] as const), required: true },
  to: { check: c.list(c.int()), required: true },
  topic: { check: c.string(), required: true },
  content: { check: requiredString, required: true },
  timestamp: { check: timestamp },
});

// The required keys are checked present, so a parsed draft is a whole DraftIn.
const parseDrafts = p.json(c.list(draftChecker)) as Parser<DraftIn[]>;
const parseDraft = p.json(draftChecker) as Parser<DraftIn>;

function draftId(req: RouteRequest): number {
  const raw = req.path.draft_id!;
  // Zulip's URL pattern takes digits only.
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

function own(req: RouteRequest) {
  return userRef(req.caller!.realmId, req.caller!.userId);
}

/**
 * Zulip checks enable_drafts_synchronization before it parses the
 * parameters: on a parse failure, ask the actor first (its answer is the
 * setting's error when synchronization is off), then report the failure.
 */
async function parseAfterSyncCheck<T>(
  req: RouteRequest,
  name: string,
  parse: (raw: string) => T,
): Promise<T> {
  try {
    const raw = req.params[name] as string | undefined;
    if (raw === undefined) throw errors.missingArgument(name);
    return parse(raw);
  } catch (e) {
    await req.call(own(req), "drafts", {});
    throw e;
  }
}

const listDrafts = defineRoute({
  method: "GET",
  path: "/drafts",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "drafts", {});
  },
});

const createDrafts = defineRoute({
  method: "POST",
  path: "/drafts",
  auth: "required",
  // Required, but checked in the handler (after the setting).
  params: { drafts: param(p.string()) },
  async handler(req) {
    const drafts = await parseAfterSyncCheck(req, "drafts", (raw) => parseDrafts(raw, "drafts"));
    return await req.call(own(req), "createDrafts", { drafts });
  },
});

const editDraft = defineRoute({
  method: "PATCH",
  path: "/drafts/:draft_id",
  auth: "required",
  params: { draft: param(p.string()) },
  async handler(req) {
    const id = draftId(req);
    const draft = await parseAfterSyncCheck(req, "draft", (raw) => parseDraft(raw, "draft"));
    return await req.call(own(req), "editDraft", { id, draft });
  },
});

const deleteDraft = defineRoute({
  method: "DELETE",
  path: "/drafts/:draft_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "deleteDraft", { id: draftId(req) });
  },
});

export const draftRoutes: RouteDef[] = [listDrafts, createDrafts, editDraft, deleteDraft];
