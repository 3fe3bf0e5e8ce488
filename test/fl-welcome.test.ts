// Feature level 416, black-box: Welcome Bot (welcome-bot@zulip.com, a
// cross-realm system bot) greets new users by direct message, followed by
// the organization's custom welcome text (realm setting
// welcome_message_custom_text, or the invitation's own text);
// POST /realm/test_welcome_bot_custom_message sends the text to the calling
// administrator. Embedded, and the main flow in cluster mode.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertError,
  assertSuccess,
  eventsUntil,
  newUser,
  openQueue,
  requireBinaries,
  startCluster,
  useEmbedded,
  WELCOME_BOT,
  type Api,
  type Creds,
  type Ev,
  type Member,
  type TestCluster,
} from "./support/index.ts";
import { until } from "./support/ops.ts";

const TEST_PATH = "/realm/test_welcome_bot_custom_message";

/** Welcome Bot's direct messages to `who`, oldest first. */
async function welcomeDms(api: Api, who: Creds): Promise<Ev[]> {
  const r = await api(
    "GET",
    "/messages",
    {
      anchor: "newest",
      num_before: 20,
      num_after: 0,
      apply_markdown: "false",
      narrow: JSON.stringify([{ operator: "dm", operand: [WELCOME_BOT.id] }]),
    },
    who,
  );
  assertSuccess(r);
  return (r.body.messages as Ev[]).filter((m) => m.sender_id === WELCOME_BOT.id);
}

async function waitDms(api: Api, who: Creds, n: number): Promise<Ev[]> {
  return until(
    `${n} Welcome Bot messages`,
    async () => {
      const got = await welcomeDms(api, who);
      return got.length >= n ? got : undefined;
    },
    20_000,
  );
}

/** Sign up through a multi-use invitation link (the sign-up form's POST). */
async function signUpWithLink(baseUrl: string, api: Api, link: string, email: string): Promise<Member> {
  const key = /\/join\/([a-z0-9]+)/.exec(link)![1]!;
  const password = "joiner-password-1";
  const res = await fetch(`${baseUrl}/accounts/register/`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html" },
    body: new URLSearchParams({ key, email, full_name: "Link Joiner", password }).toString(),
  });
  assert.equal(res.status, 200, await res.text());
  const login = await api("POST", "/fetch_api_key", { username: email, password }, null);
  assertSuccess(login);
  return { email, apiKey: login.body.api_key as string, userId: login.body.user_id as number };
}

describe("FL 416: Welcome Bot (embedded)", () => {
  const srv = useEmbedded();
  let member: Member;

  before(async () => {
    member = await newUser(srv);
  });

  test("FL 416: Welcome Bot is a cross-realm bot and greets a user created by POST /users", async () => {
    const reg = await srv.api("POST", "/register", {
      fetch_event_types: JSON.stringify(["realm", "realm_user"]),
    });
    assertSuccess(reg);
    const bot = (reg.body.cross_realm_bots as Ev[]).find((b) => b.user_id === WELCOME_BOT.id);
    assert.ok(bot, JSON.stringify(reg.body.cross_realm_bots));
    assert.equal(bot.email, "welcome-bot@zulip.com");
    assert.equal(bot.full_name, "Welcome Bot");
    assert.equal(bot.is_system_bot, true);
    assert.equal(reg.body.realm_welcome_message_custom_text, "");
    const one = await srv.api("GET", `/users/${WELCOME_BOT.id}`);
    assertSuccess(one);
    assert.equal(one.body.user.email, "welcome-bot@zulip.com");

    // No custom text: one greeting, unread.
    const dms = await waitDms(srv.api, member, 1);
    assert.equal(dms.length, 1);
    assert.match(dms[0]!.content as string, /welcome to \*\*Test Org\*\*/);
    assert.ok(!(dms[0]!.flags as string[]).includes("read"));
    assert.equal(dms[0]!.type, "private");
  });

  test("FL 416: PATCH /realm welcome_message_custom_text: event, register, checks", async () => {
    const q = await openQueue(srv, srv.owner, ["realm"]);
    assertError(
      await srv.api("PATCH", "/realm", { welcome_message_custom_text: "nope" }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assertError(
      await srv.api("PATCH", "/realm", { welcome_message_custom_text: "x".repeat(8001) }),
      "welcome_message_custom_text is too long (limit: 8000 characters)",
    );
    const r = await srv.api("PATCH", "/realm", { welcome_message_custom_text: "Read #**rules** first." });
    assertSuccess(r);
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.type === "realm"));
    const ev = evs.find((x: Ev) => x.type === "realm")!;
    assert.equal(ev.op, "update");
    assert.equal(ev.property, "welcome_message_custom_text");
    assert.equal(ev.value, "Read #**rules** first.");
    const reg = await srv.api("POST", "/register", { fetch_event_types: JSON.stringify(["realm"]) });
    assert.equal(reg.body.realm_welcome_message_custom_text, "Read #**rules** first.");

    // A user created now gets the greeting, then the custom text.
    const fresh = await newUser(srv);
    const dms = await waitDms(srv.api, fresh, 2);
    assert.equal(dms.length, 2);
    assert.match(dms[1]!.content as string, /Read #\*\*rules\*\* first\.$/);
    assert.ok((dms[0]!.id as number) < (dms[1]!.id as number));
  });

  test("FL 416: POST /realm/test_welcome_bot_custom_message", async () => {
    const before = (await welcomeDms(srv.api, srv.owner)).length;
    const r = await srv.api("POST", TEST_PATH, { welcome_message_custom_text: "Hello *team*" });
    assertSuccess(r);
    assert.equal(typeof r.body.message_id, "number");
    const dms = await waitDms(srv.api, srv.owner, before + 1);
    const sent = dms.find((m) => m.id === r.body.message_id)!;
    assert.ok(sent);
    assert.equal(sent.sender_email, "welcome-bot@zulip.com");
    assert.match(sent.content as string, /Hello \*team\*$/);

    assertError(
      await srv.api("POST", TEST_PATH, { welcome_message_custom_text: "" }),
      "Message must not be empty",
    );
    assertError(
      await srv.api("POST", TEST_PATH, {}),
      "Missing 'welcome_message_custom_text' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await srv.api("POST", TEST_PATH, { welcome_message_custom_text: "y".repeat(8001) }),
      "welcome_message_custom_text is too long (limit: 8000 characters)",
    );
    const memberBefore = (await welcomeDms(srv.api, member)).length;
    assertError(
      await srv.api("POST", TEST_PATH, { welcome_message_custom_text: "hi" }, member),
      "Must be an organization administrator",
      "UNAUTHORIZED_PRINCIPAL",
    );
    assert.equal((await welcomeDms(srv.api, member)).length, memberBefore);
    assert.equal((await welcomeDms(srv.api, srv.owner)).length, before + 1);
  });

  test("FL 416: an invitation's welcome_message_custom_text replaces the realm's", async () => {
    assertError(
      await srv.api(
        "POST",
        "/invites",
        { invitee_emails: "x@example.com", stream_ids: "[]", welcome_message_custom_text: "m" },
        member,
      ),
      "Must be an organization administrator",
    );
    const inv = await srv.api("POST", "/invites/multiuse", { welcome_message_custom_text: "From the link." });
    assertSuccess(inv);
    const joiner = await signUpWithLink(
      srv.baseUrl,
      srv.api,
      inv.body.invite_link as string,
      "linked@example.com",
    );
    const dms = await waitDms(srv.api, joiner, 2);
    assert.match(dms[1]!.content as string, /From the link\.$/);
    assert.ok(dms.every((m) => !(m.content as string).includes("rules")));

    // An invitation with "" sends no custom text, whatever the realm's.
    const quiet = await srv.api("POST", "/invites/multiuse", { welcome_message_custom_text: "" });
    assertSuccess(quiet);
    const q = await signUpWithLink(
      srv.baseUrl,
      srv.api,
      quiet.body.invite_link as string,
      "quiet@example.com",
    );
    await waitDms(srv.api, q, 1);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await welcomeDms(srv.api, q)).length, 1);
  });
});

describe("FL 416: Welcome Bot (cluster: nats-server, redis-server, two nodes, a gateway)", () => {
  const skip = requireBinaries("nats-server", "redis-server");
  let c: TestCluster;

  before(async () => {
    if (skip) return;
    c = await startCluster();
  });

  after(async () => {
    await c?.stop();
  });

  test("FL 416: greeting with the realm's text, and the test endpoint", { skip }, async () => {
    assertSuccess(await c.api("PATCH", "/realm", { welcome_message_custom_text: "Cluster hello." }));
    const u = await newUser(c);
    const dms = await waitDms(c.api, u, 2);
    assert.match(dms[1]!.content as string, /Cluster hello\.$/);
    const r = await c.api("POST", TEST_PATH, { welcome_message_custom_text: "Preview." });
    assertSuccess(r);
    const mine = await waitDms(c.api, c.owner, 1);
    assert.equal(mine[mine.length - 1]!.id, r.body.message_id);
  });
});
