// Saved snippets (Zulip's zerver/views/saved_snippets.py): parse, one call
// to the caller's user actor, reply.

import { userRef } from "../../actors/index.ts";
import { errors } from "../../actors/errors.ts";
import { defineRoute, param, type Parser, type RouteDef, type RouteRequest } from "../index.ts";

/** Zulip's SavedSnippet.MAX_TITLE_LENGTH and settings.MAX_MESSAGE_LENGTH. */
const TITLE_MAX = 60;
const CONTENT_MAX = 10000;

/** Pydantic's StringConstraints(min_length=1, max_length, strip_whitespace=True). */
function strippedText(max: number): Parser<string> {
  return (raw, name) => {
    const s = raw.trim();
    const length = [...s].length;
    if (length < 1) throw errors.tooShort(name);
    if (length > max) throw errors.tooLong(name, max);
    return s;
  };
}

function snippetId(req: RouteRequest): number {
  const raw = req.path.saved_snippet_id!;
  if (!/^\d+$/.test(raw)) throw errors.noSuchRoute();
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : 0;
}

function own(req: RouteRequest) {
  return userRef(req.caller!.realmId, req.caller!.userId);
}

const listSnippets = defineRoute({
  method: "GET",
  path: "/saved_snippets",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "savedSnippets", {});
  },
});

const createSnippet = defineRoute({
  method: "POST",
  path: "/saved_snippets",
  auth: "required",
  // Zulip's signature order: content is checked before title.
  params: {
    content: param(strippedText(CONTENT_MAX), { required: true }),
    title: param(strippedText(TITLE_MAX), { required: true }),
  },
  async handler(req) {
    return await req.call(own(req), "createSavedSnippet", {
      title: req.params.title,
      content: req.params.content,
    });
  },
});

const editSnippet = defineRoute({
  method: "PATCH",
  path: "/saved_snippets/:saved_snippet_id",
  auth: "required",
  params: {
    content: param(strippedText(CONTENT_MAX)),
    title: param(strippedText(TITLE_MAX)),
  },
  async handler(req) {
    return await req.call(own(req), "editSavedSnippet", {
      id: snippetId(req),
      title: req.params.title,
      content: req.params.content,
    });
  },
});

const deleteSnippet = defineRoute({
  method: "DELETE",
  path: "/saved_snippets/:saved_snippet_id",
  auth: "required",
  params: {},
  async handler(req) {
    return await req.call(own(req), "deleteSavedSnippet", { id: snippetId(req) });
  },
});

export const savedSnippetRoutes: RouteDef[] = [listSnippets, createSnippet, editSnippet, deleteSnippet];
