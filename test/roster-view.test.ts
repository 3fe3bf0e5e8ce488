// The roster a send reads is a per-process copy kept current by deltas from
// the realm (actors/channel/roster-view.ts, RosterLog in actors/realm/state.ts):
// after a rename, a deactivation, a new user, a role change or a change of
// email visibility, the next send mentions, formats and addresses users as
// the realm says now, never as the copy said before.
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { assertSuccess, newUser, useEmbedded, type Member } from "./support/index.ts";

const srv = useEmbedded();
let ann: Member;
let channel: string;

before(async () => {
  ann = await newUser(srv, 400, "Ann Before");
  channel = `roster view ${process.pid}`;
  assertSuccess(
    await srv.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name: channel }],
      principals: [srv.owner.userId, ann.userId],
    }),
  );
});

/** Sends as the owner and returns the stored message as Ann reads it. */
async function sendAndRead(content: string, as = srv.owner): Promise<Record<string, unknown>> {
  const sent = await srv.api("POST", "/messages", { type: "stream", to: channel, topic: "t", content }, as);
  assertSuccess(sent);
  const read = await srv.api(
    "GET",
    "/messages",
    { anchor: sent.body.id, num_before: 0, num_after: 0, narrow: [], apply_markdown: true },
    ann,
  );
  assertSuccess(read);
  return read.body.messages[0] as Record<string, unknown>;
}

test("roster view - a send after each change sees the realm as it is now", async () => {
  // Warm the copy.
  let m = await sendAndRead("@**Ann Before** hello");
  assert.ok((m.flags as string[]).includes("mentioned"));

  // Rename: the new name mentions, the old one no longer does.
  assertSuccess(await srv.api("PATCH", `/users/${ann.userId}`, { full_name: "Ann After" }));
  m = await sendAndRead("@**Ann After** again");
  assert.ok((m.flags as string[]).includes("mentioned"), "the new name mentions");
  m = await sendAndRead("@**Ann Before** stale");
  assert.ok(!(m.flags as string[]).includes("mentioned"), "the old name does not");

  // A new user is mentionable at once.
  const bob = await newUser(srv, 400, "Bob Newcomer");
  assertSuccess(
    await srv.api("POST", "/users/me/subscriptions", {
      subscriptions: [{ name: channel }],
      principals: [bob.userId],
    }),
  );
  m = await sendAndRead("@**Bob Newcomer** welcome");
  assert.match(String(m.content), new RegExp(`data-user-id="${bob.userId}"`));

  // The sender's new name shows on its new message.
  assertSuccess(await srv.api("PATCH", "/settings", { full_name: "Owner Renamed" }));
  m = await sendAndRead("renamed sender");
  assert.equal(m.sender_full_name, "Owner Renamed");

  // A deactivated user is no longer mentioned.
  assertSuccess(await srv.api("DELETE", `/users/${bob.userId}`));
  m = await sendAndRead("@**Bob Newcomer** gone");
  assert.doesNotMatch(String(m.content), new RegExp(`data-user-id="${bob.userId}"`));

  // Hiding the sender's address: the new message carries the dummy address.
  assertSuccess(await srv.api("PATCH", "/settings", { email_address_visibility: 4 }));
  m = await sendAndRead("hidden address");
  assert.notEqual(m.sender_email, srv.owner.email);
  assert.match(String(m.sender_email), /^user\d+@/);
});
