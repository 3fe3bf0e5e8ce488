// Black-box tests of the feature levels closed on the "remind" branch
// (docs/feature-levels/201-372.md and 373-496.md): the moderation request
// channel (331), message reports (382, 435), message reminders (381, 399,
// 415) and the welcome message's custom text (416).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startEmbedded, type EmbeddedHandle } from "./support/embedded.ts";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  newUser,
  openQueue,
  type Member,
} from "./support/zulip-asserts.ts";

let srv: EmbeddedHandle;
let member: Member;
let seq = 0;

before(async () => {
  srv = await startEmbedded();
  member = await newUser(srv);
});

after(async () => {
  await srv?.stop();
});

async function registerRealm(auth: Member | null = null): Promise<Record<string, unknown>> {
  const r = await srv.api("POST", "/register", { fetch_event_types: ["realm"] }, auth ?? undefined);
  assertSuccess(r);
  return r.body;
}

/** A new channel (the owner subscribed, and `subscribers`); its id. */
async function channel(opts: { inviteOnly?: boolean; subscribers?: number[] } = {}): Promise<number> {
  const r = await srv.api("POST", "/channels/create", {
    name: `fl-remind-${++seq}`,
    subscribers: [srv.owner.userId, ...(opts.subscribers ?? [])],
    invite_only: opts.inviteOnly ?? false,
  });
  assertSuccess(r);
  return r.body.id as number;
}

describe("FL 331: realm moderation_request_channel_id", () => {
  test("an administrator sets it; members hear realm/update; register follows; -1 disables", async () => {
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
    const ch = await channel({ inviteOnly: true });
    const q = await openQueue(srv, member, ["realm"]);
    const r = await srv.api("PATCH", "/realm", { moderation_request_channel_id: ch });
    assertSuccess(r);
    assert.equal(r.body.moderation_request_channel_id, ch);
    const evs = await eventsUntil(srv, q, (e) => e.some((x) => x.type === "realm"));
    assert.deepEqual(
      evs.filter((e) => e.type === "realm").map((e) => [e.op, e.property, e.value]),
      [["update", "moderation_request_channel_id", ch]],
    );
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, ch);
    assertSuccess(await srv.api("PATCH", "/realm", { moderation_request_channel_id: -1 }));
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
  });

  test("members, unknown channels and bad values are refused and change nothing", async () => {
    const ch = await channel();
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: ch }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: 999999 }),
      "Invalid channel ID",
    );
    assertError(
      await srv.api("PATCH", "/realm", { moderation_request_channel_id: "x" }),
      "moderation_request_channel_id is not valid JSON",
    );
    assert.equal((await registerRealm(member)).realm_moderation_request_channel_id, -1);
  });
});

async function send(
  auth: Member | null,
  to: number | number[],
  content: string,
  topic = "t",
): Promise<number> {
  const body: Record<string, unknown> = Array.isArray(to)
    ? { type: "direct", to: JSON.stringify(to), content }
    : { type: "stream", to, topic, content };
  const r = await srv.api("POST", "/messages", body, auth ?? undefined);
  assertSuccess(r);
  return r.body.id as number;
}

/** The newest message of a narrow, as `auth` sees it. */
async function newest(auth: Member | null, narrow: unknown[]): Promise<Record<string, any>> {
  const r = await srv.api(
    "GET",
    "/messages",
    { anchor: "newest", num_before: 1, num_after: 0, narrow: JSON.stringify(narrow), apply_markdown: false },
    auth ?? undefined,
  );
  assertSuccess(r);
  return r.body.messages.at(-1);
}

describe("FL 382, 435: POST /messages/{message_id}/report", () => {
  test("register lists the report types", async () => {
    const reg = await registerRealm(member);
    assert.deepEqual(reg.server_report_message_types, [
      { key: "spam", name: "Spam" },
      { key: "harassment", name: "Harassment" },
      { key: "inappropriate", name: "Inappropriate content" },
      { key: "norms", name: "Violates community norms" },
      { key: "other", name: "Other reason" },
    ]);
  });

  test("disabled until a moderation request channel is set; bad input refused", async () => {
    const ch = await channel({ subscribers: [member.userId] });
    const id = await send(null, ch, "hello");
    assertError(
      await srv.api("POST", `/messages/${id}/report`, { report_type: "spam" }, member),
      "Message reporting is not enabled in this organization.",
    );
    assertError(
      await srv.api("POST", `/messages/${id}/report`, { report_type: "other" }, member),
      "An explanation is required.",
    );
    assertError(
      await srv.api("POST", `/messages/${id}/report`, { report_type: "__proto__" }, member),
      "Invalid report_type",
    );
    assertError(
      await srv.api("POST", `/messages/${id}/report`, {}, member),
      "Missing 'report_type' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api(
        "POST",
        `/messages/${id}/report`,
        { report_type: "spam", description: "x".repeat(1001) },
        member,
      ),
      "description is too long (limit: 1000 characters)",
    );
  });

  test("Notification Bot posts Zulip's report into the moderation channel", async () => {
    const mod = await channel({ inviteOnly: true });
    assertSuccess(await srv.api("PATCH", "/realm", { moderation_request_channel_id: mod }));
    const n = ++seq;
    const author = await newUser(srv, 400, `Author ${n}`);
    const reporter = await newUser(srv, 400, `Reporter ${n}`);
    const ch = await channel({ subscribers: [author.userId, reporter.userId] });
    const name = `fl-remind-${seq}`;
    const id = await send(author, ch, "buy ```stuff```\n```\ncode\n```");
    const r = await srv.api(
      "POST",
      `/messages/${id}/report`,
      { report_type: "spam", description: "Selling things." },
      reporter,
    );
    assertSuccess(r);
    const got = await newest(null, [{ operator: "channel", operand: mod }]);
    assert.equal(got.sender_full_name, "Notification Bot");
    assert.equal(got.subject, `Author ${n} moderation`);
    const sent = (await srv.api("GET", `/messages/${id}`, {}, author)).body.message.timestamp as number;
    const at = `<time:${new Date(sent * 1000).toISOString().slice(0, 19)}+00:00>`;
    assert.equal(
      got.content,
      `@_**Reporter ${n}|${reporter.userId}** reported a message sent by @_**Author ${n}|${author.userId}** at ${at}.\n` +
        "```quote\n**Spam**. Selling things.\n```\n\n" +
        `\`\`\`\` spoiler Original message at [#${name} > t](#narrow/channel/${ch}-${name}/topic/t/with/${id})\n` +
        "buy ```stuff```\n```\ncode\n```\n````",
    );
    // A direct message: the link goes to the conversation.
    const dm = await send(author, [reporter.userId], "hi there");
    assertSuccess(await srv.api("POST", `/messages/${dm}/report`, { report_type: "norms" }, reporter));
    const got2 = await newest(null, [{ operator: "channel", operand: mod }]);
    const ids = [author.userId, reporter.userId].sort((a, b) => a - b).join(",");
    assert.match(got2.content, /^@_\*\*Reporter .* reported a message sent by @_\*\*Author /);
    assert.ok(
      got2.content.includes(`[Original message](http://localhost/#narrow/dm/${ids}/near/${dm})`),
      got2.content,
    );
    assert.ok(got2.content.includes("**Violates community norms**. \n"));
  });

  test("a message the reporter cannot read is refused, and nothing is posted", async () => {
    const mod = await channel({ inviteOnly: true });
    assertSuccess(await srv.api("PATCH", "/realm", { moderation_request_channel_id: mod }));
    const secret = await channel({ inviteOnly: true });
    const id = await send(null, secret, "secret");
    assertError(
      await srv.api("POST", `/messages/${id}/report`, { report_type: "spam" }, member),
      "Invalid message(s)",
    );
    assertError(
      await srv.api("POST", `/messages/99999999/report`, { report_type: "spam" }, member),
      "Invalid message(s)",
    );
    assert.equal(await newest(null, [{ operator: "channel", operand: mod }]), undefined);
  });
});
