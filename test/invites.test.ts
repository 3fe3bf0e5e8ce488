// Invitations, black-box: GET/POST /invites, POST /invites/multiuse,
// revoking and resending, with Zulip's errors and the invites_changed
// event; the invitation email received by a real SMTP server (smtp-server)
// through the EMAIL_* settings; and the sign-up page the email's link
// opens, driven in headless Chromium, after which the new user logs in and
// is in the invitation's channels and groups.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { realmBehavior } from "../actors/realm/index.ts";
import type { RealmState } from "../actors/realm/index.ts";
import type { Obj } from "../actors/types.ts";
import {
  assertError,
  assertSuccess,
  drain,
  eventsUntil,
  hasBinary,
  newUser,
  openQueue,
  requireBinaries,
  startCluster,
  startEmbedded,
  type Creds,
  type EmbeddedHandle,
  type Ev,
  type Member,
  type TestCluster,
} from "./support/index.ts";
import { until } from "./support/ops.ts";
import { Writable } from "node:stream";
import { createLogger, rootLogger, setRootLogger } from "../cluster/log.ts";
import { TestSmtp, driveSignup, fillAndSubmit, linkPath } from "./support/invites.ts";

const SMTP_USER = "relay-user";
const SMTP_PASSWORD = "relay-secret";

describe("invitations (embedded)", () => {
  let srv: EmbeddedHandle;
  let smtp: TestSmtp;
  const saved: Record<string, string | undefined> = {};

  before(async () => {
    smtp = await TestSmtp.start({ user: SMTP_USER, password: SMTP_PASSWORD });
    const env: Record<string, string> = {
      EMAIL_HOST: "127.0.0.1",
      EMAIL_PORT: String(smtp.port),
      EMAIL_HOST_USER: SMTP_USER,
      EMAIL_HOST_PASSWORD: SMTP_PASSWORD,
      EMAIL_USE_TLS: "false",
      NOREPLY_EMAIL_ADDRESS: "noreply@invites.test",
    };
    for (const [k, v] of Object.entries(env)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
    srv = await startEmbedded();
  });

  after(async () => {
    await srv?.stop();
    await smtp?.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  async function channel(name: string, auth: Creds = srv.owner): Promise<number> {
    const r = await srv.api("POST", "/users/me/subscriptions", { subscriptions: [{ name }] }, auth);
    assertSuccess(r);
    const id = await srv.api("GET", "/get_stream_id", { stream: name }, auth);
    assertSuccess(id);
    return id.body.stream_id as number;
  }

  test(
    "an email invitation is mailed over SMTP, and its link signs the invitee up (headless Chromium)",
    { skip: hasBinary("chromium") ? false : requireBinaries("chromium") },
    async () => {
      const streamId = await channel("invite landing");
      const group = await srv.api("POST", "/user_groups/create", {
        name: "invitees",
        description: "joined by invitation",
        members: [srv.owner.userId],
      });
      assertSuccess(group);
      const groupId = group.body.group_id as number;
      const q = await openQueue(srv, srv.owner, ["invites_changed"]);

      const sent = await srv.api("POST", "/invites", {
        invitee_emails: "New Person <newbie@example.com>",
        stream_ids: [streamId],
        group_ids: [groupId],
        invite_as: 300,
        invite_expires_in_minutes: 60,
      });
      assertSuccess(sent);
      const evs = await eventsUntil(srv, q, (e) => e.length > 0);
      assert.deepEqual(
        evs.map((e) => e.type),
        ["invites_changed"],
      );

      const mail = await until("the invitation email", async () => smtp.find("newbie@example.com"));
      assert.equal(mail.from, "noreply@invites.test");
      assert.equal(mail.authUser, SMTP_USER);
      assert.match(mail.text, /Olivia Owner/);
      assert.match(mail.text, /Test Org/);
      const path = linkPath(mail.text);
      assert.match(path, /^\/accounts\/do_confirm\/[a-z0-9]{24}$/);

      const listed = await srv.api("GET", "/invites");
      assertSuccess(listed);
      const inv = listed.body.invites.find((i: { email?: string }) => i.email === "newbie@example.com");
      assert.ok(inv, JSON.stringify(listed.body));
      assert.equal(inv.invited_as, 300);
      assert.equal(inv.is_multiuse, false);
      assert.equal(inv.invited_by_user_id, srv.owner.userId);
      assert.equal(inv.notify_referrer_on_join, true);
      assert.equal(inv.expiry_date - inv.invited, 3600);

      const dom = await driveSignup(`${srv.baseUrl}${path}`, (page) =>
        fillAndSubmit(page, { full_name: "New Person", password: "newbie-password-1" }),
      );
      assert.match(dom, /Your account is ready/, dom);
      assert.match(dom, /newbie@example\.com/);

      const login = await srv.api(
        "POST",
        "/fetch_api_key",
        { username: "newbie@example.com", password: "newbie-password-1" },
        null,
      );
      assertSuccess(login);
      const me: Creds = { email: "newbie@example.com", apiKey: login.body.api_key };
      const profile = await srv.api("GET", "/users/me", {}, me);
      assertSuccess(profile);
      assert.equal(profile.body.role, 300);
      assert.equal(profile.body.full_name, "New Person");
      const subs = await srv.api("GET", "/users/me/subscriptions", {}, me);
      assertSuccess(subs);
      assert.ok(subs.body.subscriptions.some((s: { stream_id: number }) => s.stream_id === streamId));
      const members = await srv.api("GET", `/user_groups/${groupId}/members`);
      assertSuccess(members);
      assert.ok(members.body.members.includes(profile.body.user_id));

      // Used: gone from the list, and the link shows an error page.
      const again = await srv.api("GET", "/invites");
      assert.ok(!again.body.invites.some((i: { email?: string }) => i.email === "newbie@example.com"));
      const res = await fetch(`${srv.baseUrl}${path}`, { headers: { accept: "text/html" } });
      assert.equal(res.status, 404);
      assert.match(res.headers.get("content-type") ?? "", /^text\/html/);
      assert.match(await res.text(), /expired or been deactivated/);
      // An API client gets Zulip's JSON error.
      const json = await fetch(`${srv.baseUrl}${path}`);
      assert.equal(json.status, 404);
      assert.deepEqual(await json.json(), {
        result: "error",
        msg: "The confirmation link has expired or been deactivated.",
        code: "BAD_REQUEST",
      });
    },
  );

  test("a refused send is retried without holding up the reply, and resending mails the same link", async () => {
    smtp.rejectNext = 1;
    assertSuccess(await srv.api("POST", "/invites", { invitee_emails: "flaky@example.com", stream_ids: [] }));
    // Answered before any delivery: the first attempt is refused and the
    // next comes a backoff later.
    assert.equal(smtp.count("flaky@example.com"), 0);
    const mail = await until("the retried email", async () => smtp.find("flaky@example.com"), 20_000);
    assert.equal(smtp.rejected, 1);
    assert.equal(smtp.count("flaky@example.com"), 1);

    const inv = (await srv.api("GET", "/invites")).body.invites.find(
      (i: { email?: string }) => i.email === "flaky@example.com",
    );
    assertSuccess(await srv.api("POST", `/invites/${inv.id}/resend`));
    await until("the resent email", async () => smtp.count("flaky@example.com") === 2);
    assert.equal(linkPath(smtp.find("flaky@example.com")!.text), linkPath(mail.text));
  });
});

/** The sign-up form's POST as a browser sends it. */
async function postSignup(
  baseUrl: string,
  fields: Record<string, string>,
  accept = "text/html",
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${baseUrl}/accounts/register/`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, text: await res.text() };
}

function keyOf(link: string): string {
  return /\/(?:join|accounts\/do_confirm)\/([a-z0-9]+)/.exec(link)![1]!;
}

describe("invitations: permissions, errors, events (embedded)", () => {
  let srv: EmbeddedHandle;
  let admin: Member;
  let moderator: Member;
  let member: Member;
  let other: Member;
  let guest: Member;
  let bot: Creds;
  let publicId: number;
  let privateId: number;

  before(async () => {
    // No EMAIL_HOST: the worker logs each invitation's link instead of mailing it.
    const saved = rootLogger();
    setRootLogger(createLogger({}, logSink));
    try {
      srv = await startEmbedded();
    } finally {
      setRootLogger(saved);
    }
    admin = await newUser(srv, 200, "Ada Admin");
    moderator = await newUser(srv, 300, "Moe Moderator");
    member = await newUser(srv, 400, "Mem Member");
    other = await newUser(srv, 400, "Otto Other");
    guest = await newUser(srv, 600, "Gus Guest");
    const b = await srv.api("POST", "/bots", { full_name: "Invite Bot", short_name: "invitebot" });
    assertSuccess(b);
    bot = {
      email: (await srv.api("GET", `/users/${b.body.user_id}`)).body.user.email,
      apiKey: b.body.api_key,
    };
    for (const name of ["open house", "secret room"]) {
      assertSuccess(
        await srv.api("POST", "/users/me/subscriptions", {
          subscriptions: [{ name }],
          invite_only: name === "secret room",
        }),
      );
    }
    publicId = (await srv.api("GET", "/get_stream_id", { stream: "open house" })).body.stream_id;
    privateId = (await srv.api("GET", "/get_stream_id", { stream: "secret room" })).body.stream_id;
  });

  after(async () => {
    await srv?.stop();
  });

  const invite = (auth: Creds, params: Record<string, unknown>) =>
    srv.api("POST", "/invites", { stream_ids: [], ...params }, auth);

  async function listed(auth: Creds = srv.owner): Promise<Ev[]> {
    const r = await srv.api("GET", "/invites", {}, auth);
    assertSuccess(r);
    return r.body.invites;
  }

  test("without EMAIL_HOST the server says so at start and logs each invitation's link", async () => {
    assert.ok(
      LOG_LINES.some((l) => /EMAIL_HOST is not set/.test(String(l.msg))),
      JSON.stringify(LOG_LINES.slice(0, 20)),
    );
    assertSuccess(await invite(srv.owner, { invitee_emails: "logged@example.com" }));
    const link = await until("the logged link", async () => LOGGED.get("logged@example.com"));
    assert.match(link, /^http:\/\/localhost\/accounts\/do_confirm\/[a-z0-9]{24}$/);
  });

  test("who may invite, and as which role", async () => {
    assertError(await invite(guest, { invitee_emails: "g1@example.com" }), "Not allowed for guest users");
    assertError(
      await invite(bot, { invitee_emails: "b1@example.com" }),
      "This endpoint does not accept bot requests.",
    );
    assertError(
      await invite(member, { invitee_emails: "m1@example.com", invite_as: 200 }),
      "Must be an organization administrator",
    );
    assertError(
      await invite(admin, { invitee_emails: "a1@example.com", invite_as: 100 }),
      "Must be an organization owner",
      "UNAUTHORIZED_PRINCIPAL",
    );
    // Since Zulip 10, moderators and members may invite moderators.
    assertSuccess(await invite(moderator, { invitee_emails: "mod1@example.com", invite_as: 300 }));
    assertSuccess(await invite(member, { invitee_emails: "mem1@example.com", invite_as: 600 }));
    assertSuccess(await invite(srv.owner, { invitee_emails: "own1@example.com", invite_as: 100 }));
    const own1 = (await listed()).find((i) => i.email === "own1@example.com");
    assert.equal(own1.expiry_date - own1.invited, 14400 * 60, "ten days by default");
    assertError(await srv.api("GET", "/invites", {}, guest), "Not allowed for guest users");
    // Reusable links: administrators only by default (create_multiuse_invite_group).
    assertError(await srv.api("POST", "/invites/multiuse", {}, member), "Insufficient permission");
    assertSuccess(await srv.api("POST", "/invites/multiuse", {}, admin));

    // An organization anyone may join: new accounts may not invite, administrators may.
    assertSuccess(await srv.api("PATCH", "/realm", { invite_required: false }));
    try {
      const young = await invite(member, { invitee_emails: "young@example.com" });
      assertError(
        young,
        "Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.",
        "INVITATION_FAILED",
      );
      assert.equal(young.body.sent_invitations, false);
      assertSuccess(await invite(admin, { invitee_emails: "young@example.com" }));
    } finally {
      assertSuccess(await srv.api("PATCH", "/realm", { invite_required: true }));
    }

    // can_invite_users_group narrowed to administrators.
    const groups = (await srv.api("GET", "/user_groups")).body.user_groups as Ev[];
    const admins = groups.find((g) => g.name === "role:administrators").id as number;
    const members = groups.find((g) => g.name === "role:members").id as number;
    assertSuccess(
      await srv.api("PATCH", "/realm", { can_invite_users_group: JSON.stringify({ new: admins }) }),
    );
    try {
      assertError(await invite(member, { invitee_emails: "m2@example.com" }), "Insufficient permission");
      assertSuccess(await invite(admin, { invitee_emails: "a2@example.com" }));
    } finally {
      assertSuccess(
        await srv.api("PATCH", "/realm", { can_invite_users_group: JSON.stringify({ new: members }) }),
      );
    }
  });

  test("the documented errors, each changing nothing", async () => {
    const before = (await listed()).length;
    assertError(await invite(member, { invitee_emails: "" }), "You must specify at least one email address.");
    assertError(
      await srv.api("POST", "/invites", { invitee_emails: "x@example.com" }, member),
      "Missing 'stream_ids' argument",
      "REQUEST_VARIABLE_MISSING",
    );
    assertError(
      await invite(member, { invitee_emails: "x@example.com", stream_ids: [987654] }),
      "Invalid channel ID 987654. No invites were sent.",
    );
    // A private channel the inviter is not subscribed to is as good as missing.
    assertError(
      await invite(member, { invitee_emails: "x@example.com", stream_ids: [privateId] }),
      `Invalid channel ID ${privateId}. No invites were sent.`,
    );
    assertError(
      await invite(member, { invitee_emails: "x@example.com", group_ids: [987654] }),
      "Invalid user group",
    );

    const bad = await invite(member, { invitee_emails: "fine@example.com, not-an-address" });
    assertError(bad, "Some emails did not validate, so we didn't send any invitations.", "INVITATION_FAILED");
    assert.deepEqual(bad.body.errors, [["not-an-address", "Invalid address.", false]]);
    assert.equal(bad.body.sent_invitations, false);
    assert.equal(bad.body.daily_limit_reached, false);
    assert.equal(bad.body.license_limit_reached, false);

    const taken = await invite(member, { invitee_emails: `${other.email}\n${srv.owner.email}` });
    assertError(taken, "We weren't able to invite anyone.", "INVITATION_FAILED");
    assert.deepEqual(
      new Set(taken.body.errors.map((e: Ev) => JSON.stringify(e))),
      new Set([
        JSON.stringify([other.email, "Already has an account.", false]),
        JSON.stringify([srv.owner.email, "Already has an account.", false]),
      ]),
    );

    // Too many at once: the daily limit, before anything else is looked at.
    const many = Array.from({ length: 101 }, (_, i) => `bulk${i}@example.com`).join(",");
    const limited = await invite(member, { invitee_emails: many });
    assertError(
      limited,
      "To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.",
      "INVITATION_FAILED",
    );
    assert.equal(limited.body.daily_limit_reached, true);
    assert.equal((await listed()).length, before);

    // Some already have accounts: the others are invited, and the error says so.
    const partial = await invite(member, { invitee_emails: `${other.email}, partial@example.com` });
    assertError(
      partial,
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      "INVITATION_FAILED",
    );
    assert.equal(partial.body.sent_invitations, true);
    assert.deepEqual(partial.body.errors, [[other.email, "Already has an account.", false]]);
    assert.ok((await listed()).some((i) => i.email === "partial@example.com"));

    // A deactivated account is named as such.
    const gone = await newUser(srv, 400, "Dee Deactivated");
    assertSuccess(await srv.api("DELETE", `/users/${gone.userId}`));
    const deact = await invite(member, { invitee_emails: gone.email });
    assertError(deact, "We weren't able to invite anyone.", "INVITATION_FAILED");
    assert.deepEqual(deact.body.errors, [[gone.email, "Account has been deactivated.", true]]);
  });

  test("bad input gets Zulip's errors and changes nothing", async () => {
    const before = JSON.stringify(await listed());
    const cases: [Record<string, unknown>, string][] = [
      [{ invitee_emails: "x@example.com", invite_as: 123 }, "Invalid invite_as"],
      [{ invitee_emails: "x@example.com", invite_as: "member" }, "invite_as is not valid JSON"],
      [{ invitee_emails: "x@example.com", invite_as: "true" }, "invite_as is not an integer"],
      [{ invitee_emails: "x@example.com", stream_ids: "[1" }, "stream_ids is not valid JSON"],
      [{ invitee_emails: "x@example.com", stream_ids: '{"a":1}' }, "stream_ids is not a list"],
      [{ invitee_emails: "x@example.com", group_ids: '["1"]' }, "group_ids[0] is not an integer"],
      [
        { invitee_emails: "x@example.com", invite_expires_in_minutes: "1.5" },
        "invite_expires_in_minutes is not an integer",
      ],
      [
        { invitee_emails: "x@example.com", include_realm_default_subscriptions: "yes" },
        "include_realm_default_subscriptions is not valid JSON",
      ],
      [
        { invitee_emails: "x@example.com", invite_expires_in_minutes: 9007199254740991 },
        "Invalid invite_expires_in_minutes",
      ],
    ];
    for (const [params, msg] of cases) {
      const r = await srv.api("POST", "/invites", { stream_ids: [], ...params });
      assert.equal(r.status, 400, `${JSON.stringify(params)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.msg, msg, JSON.stringify(params));
    }
    // Prototype names are addresses like any other (and not valid ones).
    const proto = await invite(srv.owner, { invitee_emails: "__proto__, constructor" });
    assertError(
      proto,
      "Some emails did not validate, so we didn't send any invitations.",
      "INVITATION_FAILED",
    );
    for (const path of ["/invites/__proto__", "/invites/multiuse/constructor", "/invites/toString/resend"]) {
      const r = await srv.api(path.endsWith("resend") ? "POST" : "DELETE", path);
      assert.equal(r.status, 404, `${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.result, "error");
    }
    // A huge list costs linear time and is refused whole.
    const huge = "a@example.com,".repeat(50_000);
    const t0 = Date.now();
    const r = await invite(srv.owner, { invitee_emails: huge + "<".repeat(100_000) });
    assert.equal(r.status, 400);
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
    // Sign-up keys that are prototype names find nothing.
    for (const key of ["__proto__", "constructor", "hasOwnProperty"]) {
      const s = await postSignup(
        srv.baseUrl,
        { key, full_name: "Proto Type", password: "proto-password" },
        "*/*",
      );
      assert.equal(s.status, 404, s.text);
      assert.equal(JSON.parse(s.text).msg, "Whoops. We couldn't find your confirmation link in the system.");
    }
    assert.equal(JSON.stringify(await listed()), before);
  });

  test("channel permission: inviting into a channel needs can_add_subscribers_group, default channels excepted", async () => {
    const groups = (await srv.api("GET", "/user_groups")).body.user_groups as Ev[];
    const admins = groups.find((g) => g.name === "role:administrators").id as number;
    const members = groups.find((g) => g.name === "role:members").id as number;
    assertSuccess(
      await srv.api("PATCH", "/realm", { can_add_subscribers_group: JSON.stringify({ new: admins }) }),
    );
    try {
      assertError(
        await invite(member, { invitee_emails: "chan1@example.com", stream_ids: [publicId] }),
        "You do not have permission to subscribe other users to channels.",
      );
      assertSuccess(await srv.api("POST", "/default_streams", { stream_id: publicId }));
      assertSuccess(await invite(member, { invitee_emails: "chan1@example.com", stream_ids: [publicId] }));
    } finally {
      assertSuccess(await srv.api("DELETE", "/default_streams", { stream_id: publicId }));
      assertSuccess(
        await srv.api("PATCH", "/realm", { can_add_subscribers_group: JSON.stringify({ new: members }) }),
      );
    }
  });

  test("listing, revoking and resending follow who may manage an invitation; invites_changed reaches them", async () => {
    const qOwner = await openQueue(srv, srv.owner, ["invites_changed"]);
    const qMember = await openQueue(srv, member, ["invites_changed"]);
    const qOther = await openQueue(srv, other, ["invites_changed"]);

    assertSuccess(await invite(member, { invitee_emails: "managed@example.com" }));
    const ownerEvs = await eventsUntil(srv, qOwner, (e) => e.length > 0);
    const memberEvs = await eventsUntil(srv, qMember, (e) => e.length > 0);
    assert.deepEqual(
      ownerEvs.map((e) => e.type),
      ["invites_changed"],
    );
    assert.deepEqual(
      memberEvs.map((e) => e.type),
      ["invites_changed"],
    );

    const mine = await listed(member);
    const inv = mine.find((i) => i.email === "managed@example.com");
    assert.ok(inv);
    assert.ok(
      mine.every((i) => i.invited_by_user_id === member.userId),
      "a member sees only their own",
    );
    assert.ok((await listed(other)).every((i) => i.email !== "managed@example.com"));
    assert.ok(
      (await listed(admin)).some((i) => i.id === inv.id),
      "administrators see everyone's",
    );

    assertError(
      await srv.api("DELETE", `/invites/${inv.id}`, {}, other),
      "Must be an organization administrator",
    );
    assertError(
      await srv.api("POST", `/invites/${inv.id}/resend`, {}, other),
      "Must be an organization administrator",
    );
    assertSuccess(await srv.api("POST", `/invites/${inv.id}/resend`, {}, admin));
    assertError(await srv.api("DELETE", "/invites/987654", {}, admin), "No such invitation");
    assertError(await srv.api("POST", "/invites/987654/resend", {}, admin), "No such invitation");

    // An owner's invitation is managed by owners only.
    assertSuccess(await invite(srv.owner, { invitee_emails: "future-owner@example.com", invite_as: 100 }));
    const ownerInv = (await listed()).find((i) => i.email === "future-owner@example.com");
    assertError(
      await srv.api("DELETE", `/invites/${ownerInv.id}`, {}, admin),
      "Must be an organization owner",
      "UNAUTHORIZED_PRINCIPAL",
    );

    await drain(srv, qOwner);
    await drain(srv, qMember);
    assertSuccess(await srv.api("DELETE", `/invites/${inv.id}`, {}, member));
    assert.deepEqual(
      (await eventsUntil(srv, qMember, (e) => e.length > 0)).map((e) => e.type),
      ["invites_changed"],
    );
    assert.deepEqual(
      (await eventsUntil(srv, qOwner, (e) => e.length > 0)).map((e) => e.type),
      ["invites_changed"],
    );
    assert.ok((await listed(member)).every((i) => i.id !== inv.id));
    assertError(await srv.api("DELETE", `/invites/${inv.id}`, {}, member), "No such invitation");
    // Another member heard of none of it.
    assert.deepEqual(await drain(srv, qOther), []);

    // Reusable links: their own id space, revoked once.
    const link = await srv.api("POST", "/invites/multiuse", { invite_as: 600 }, admin);
    assertSuccess(link);
    const m = (await listed(admin)).find((i) => i.is_multiuse && i.link_url === link.body.invite_link);
    assert.ok(m, JSON.stringify(await listed(admin)));
    assert.equal(m.invited_as, 600);
    assert.equal(m.email, undefined);
    assertError(
      await srv.api("DELETE", `/invites/multiuse/${m.id}`, {}, member),
      "Must be an organization administrator",
    );
    assertSuccess(await srv.api("DELETE", `/invites/multiuse/${m.id}`, {}, admin));
    assertError(
      await srv.api("DELETE", `/invites/multiuse/${m.id}`, {}, admin),
      "Invitation has already been revoked",
    );
    assertError(await srv.api("DELETE", "/invites/multiuse/987654", {}, admin), "No such invitation");
  });

  test("a reusable link signs up several people until it is revoked", async () => {
    const link = await srv.api("POST", "/invites/multiuse", {
      stream_ids: [publicId],
      include_realm_default_subscriptions: true,
      invite_expires_in_minutes: null,
    });
    assertSuccess(link);
    assert.match(link.body.invite_link, /^http:\/\/localhost\/join\/[a-z0-9]{24}\/$/);
    const key = keyOf(link.body.invite_link);
    const form = await fetch(`${srv.baseUrl}/join/${key}/`, { headers: { accept: "text/html" } });
    assert.equal(form.status, 200);
    const formHtml = await form.text();
    assert.match(formHtml, /name="email"/);
    assert.match(form.headers.get("content-security-policy") ?? "", /form-action 'self'/);

    for (const n of [1, 2]) {
      const s = await postSignup(srv.baseUrl, {
        key,
        email: `reuse${n}@example.com`,
        full_name: `Reuse Number${n}`,
        password: `reuse-password-${n}`,
      });
      assert.equal(s.status, 200, s.text);
      assert.match(s.text, new RegExp(`reuse${n}@example\\.com`));
      const login = await srv.api(
        "POST",
        "/fetch_api_key",
        { username: `reuse${n}@example.com`, password: `reuse-password-${n}` },
        null,
      );
      assertSuccess(login);
      const me = { email: `reuse${n}@example.com`, apiKey: login.body.api_key };
      const subs = (await srv.api("GET", "/users/me/subscriptions", {}, me)).body.subscriptions as Ev[];
      assert.ok(subs.some((x) => x.stream_id === publicId));
      assert.equal((await srv.api("GET", "/users/me", {}, me)).body.role, 400);
    }
    // The address is taken now: the form says so, with what was typed escaped.
    const dup = await postSignup(srv.baseUrl, {
      key,
      email: "reuse1@example.com",
      full_name: "Again & <i again",
      password: "whatever-password",
    });
    assert.equal(dup.status, 400);
    assert.match(dup.text, /Email &#39;reuse1@example\.com&#39; already in use/);
    assert.ok(!dup.text.includes("<i again"));
    assert.match(dup.text, /value="Again &#38; &#60;i again"/);

    const m = (await listed()).find((i) => i.is_multiuse && i.link_url === link.body.invite_link);
    assert.equal(m.expiry_date, null);
    assertSuccess(await srv.api("DELETE", `/invites/multiuse/${m.id}`));
    const after = await postSignup(srv.baseUrl, {
      key,
      email: "reuse3@example.com",
      full_name: "Reuse Three",
      password: "reuse-password-3",
    });
    assert.equal(after.status, 404);
    assert.match(after.text, /expired or been deactivated/);
    const login = await srv.api(
      "POST",
      "/fetch_api_key",
      { username: "reuse3@example.com", password: "reuse-password-3" },
      null,
    );
    assert.equal(login.status, 401);
  });

  test("signing up spends the address's other invitations", async () => {
    assertSuccess(await invite(srv.owner, { invitee_emails: "twice@example.com" }));
    assertSuccess(await invite(member, { invitee_emails: "twice@example.com" }));
    assert.equal((await listed()).filter((i) => i.email === "twice@example.com").length, 2);
    const key = await inviteKeyFor(srv, "twice@example.com");
    const q = await openQueue(srv, member, ["invites_changed"]);
    const done = await postSignup(srv.baseUrl, {
      key,
      full_name: "Twice Invited",
      password: "twice-password",
    });
    assert.equal(done.status, 200, done.text);
    assert.equal((await listed()).filter((i) => i.email === "twice@example.com").length, 0);
    assert.deepEqual(
      (await eventsUntil(srv, q, (e) => e.length > 0)).map((e) => e.type),
      ["invites_changed"],
    );
  });

  test("deactivating a user revokes their invitations", async () => {
    const leaving = await newUser(srv, 200, "Lee Leaving");
    assertSuccess(await invite(leaving, { invitee_emails: "orphan@example.com" }));
    const link = await srv.api("POST", "/invites/multiuse", {}, leaving);
    assertSuccess(link);
    const key = await inviteKeyFor(srv, "orphan@example.com");
    assert.equal((await listed()).filter((i) => i.invited_by_user_id === leaving.userId).length, 2);
    const q = await openQueue(srv, srv.owner, ["invites_changed"]);
    assertSuccess(await srv.api("DELETE", `/users/${leaving.userId}`));
    assert.deepEqual(
      (await eventsUntil(srv, q, (e) => e.length > 0)).map((e) => e.type),
      ["invites_changed"],
    );
    assert.equal((await listed()).filter((i) => i.invited_by_user_id === leaving.userId).length, 0);
    for (const k of [key, keyOf(link.body.invite_link)]) {
      const s = await postSignup(srv.baseUrl, {
        key: k,
        email: "orphan@example.com",
        full_name: "Orphan Invitee",
        password: "orphan-password",
      });
      assert.equal(s.status, 404, s.text);
      assert.match(s.text, /expired or been deactivated/);
    }
  });

  test("the sign-up form checks its fields; expired and unknown links show an error page", async () => {
    assertSuccess(await invite(srv.owner, { invitee_emails: "formcheck@example.com" }));
    const key = await inviteKeyFor(srv, "formcheck@example.com");
    const weak = await postSignup(srv.baseUrl, { key, full_name: "Form Check", password: "abc" });
    assert.equal(weak.status, 400);
    assert.match(weak.text, /The password is too weak\./);
    const badName = await postSignup(srv.baseUrl, {
      key,
      full_name: '<script>alert("x")</script>',
      password: "good-password-1",
    });
    assert.equal(badName.status, 400);
    assert.match(badName.text, /Invalid characters in name!/);
    assert.ok(!badName.text.includes("<script>alert"), badName.text);
    assert.match(badName.text, /&#60;script&#62;/);
    // Nothing was created by the failed attempts; the link still works.
    assert.equal(
      (await srv.api("POST", "/fetch_api_key", { username: "formcheck@example.com", password: "abc" }, null))
        .status,
      401,
    );
    const ok = await postSignup(srv.baseUrl, { key, full_name: "Form Check", password: "good-password-1" });
    assert.equal(ok.status, 200, ok.text);
    // GET with a made-up key.
    const unknown = await fetch(`${srv.baseUrl}/join/abcdefghijklmnopqrstuvwx/`, {
      headers: { accept: "text/html" },
    });
    assert.equal(unknown.status, 404);
    assert.match(await unknown.text(), /couldn&#39;t find your confirmation link/);
    // Expired: a zero-minute invitation.
    assertSuccess(
      await invite(srv.owner, { invitee_emails: "expired@example.com", invite_expires_in_minutes: 0 }),
    );
    const expiredPage = await postSignup(srv.baseUrl, {
      key: await inviteKeyFor(srv, "expired@example.com"),
      full_name: "Too Late",
      password: "late-password-1",
    });
    assert.equal(expiredPage.status, 404);
    assert.match(expiredPage.text, /expired or been deactivated/);
    // The form is POST-only.
    const get = await fetch(`${srv.baseUrl}/accounts/register/?key=${key}`);
    assert.ok(get.status === 404 || get.status === 405, String(get.status));
  });
});

/** What the server without EMAIL_HOST logged, and the invitation links in it by address. */
const LOG_LINES: Record<string, unknown>[] = [];
const LOGGED = new Map<string, string>();
const logSink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    for (const text of chunk.toString().split("\n")) {
      if (!text) continue;
      const line = JSON.parse(text) as Record<string, unknown>;
      LOG_LINES.push(line);
      if (typeof line.to === "string" && typeof line.link === "string") LOGGED.set(line.to, line.link);
    }
    cb();
  },
});

/** An email invitation's key, from the link the server logged in place of the email. */
async function inviteKeyFor(_srv: EmbeddedHandle, email: string): Promise<string> {
  const link = await until(`the link for ${email}`, async () => LOGGED.get(email));
  return keyOf(link);
}

describe("invitations (cluster: nats-server, redis-server, two nodes, a gateway)", () => {
  const skip = requireBinaries("nats-server", "redis-server");
  let c: TestCluster;
  let smtp: TestSmtp;

  before(async () => {
    if (skip) return;
    smtp = await TestSmtp.start({ user: SMTP_USER, password: SMTP_PASSWORD });
    c = await startCluster({
      env: {
        EMAIL_HOST: "127.0.0.1",
        EMAIL_PORT: String(smtp.port),
        EMAIL_HOST_USER: SMTP_USER,
        EMAIL_HOST_PASSWORD: SMTP_PASSWORD,
        EMAIL_USE_TLS: "false",
        NOREPLY_EMAIL_ADDRESS: "noreply@cluster.test",
      },
    });
  });

  after(async () => {
    await c?.stop();
    await smtp?.stop();
  });

  test("invite, email, sign up, log in, in the channel", { skip }, async () => {
    assertSuccess(
      await c.api("POST", "/users/me/subscriptions", { subscriptions: [{ name: "cluster hall" }] }),
    );
    const streamId = (await c.api("GET", "/get_stream_id", { stream: "cluster hall" })).body
      .stream_id as number;
    assertSuccess(
      await c.api("POST", "/invites", { invitee_emails: "clustered@example.com", stream_ids: [streamId] }),
    );
    const mail = await until("the invitation email", async () => smtp.find("clustered@example.com"), 20_000);
    assert.equal(mail.from, "noreply@cluster.test");
    const path = linkPath(mail.text);
    const form = await fetch(`${c.baseUrl}${path}`, { headers: { accept: "text/html" } });
    assert.equal(form.status, 200);
    assert.match(await form.text(), /clustered@example\.com/);

    const done = await postSignup(c.baseUrl, {
      key: keyOf(path),
      full_name: "Cluster Person",
      password: "cluster-password-1",
    });
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /Your account is ready/);
    const login = await c.api(
      "POST",
      "/fetch_api_key",
      { username: "clustered@example.com", password: "cluster-password-1" },
      null,
    );
    assertSuccess(login);
    const me = { email: "clustered@example.com", apiKey: login.body.api_key };
    const subs = (await c.api("GET", "/users/me/subscriptions", {}, me)).body.subscriptions as Ev[];
    assert.ok(
      subs.some((x) => x.stream_id === streamId),
      JSON.stringify(subs),
    );
    const listed = (await c.api("GET", "/invites")).body.invites as Ev[];
    assert.ok(listed.every((i) => i.email !== "clustered@example.com"));
  });
});

test("invitations survive a snapshot, their key index keeps a null prototype", () => {
  const ref = { kind: "realm" as const, realm: 7, key: "realm" };
  let state = realmBehavior.initial(ref);
  const base = {
    referrerId: 1,
    invitedAt: 1_000,
    expiresAt: null,
    invitedAs: 400,
    streamIds: [3],
    groupIds: [],
    includeDefaults: false,
  };
  const facts: Obj[] = [
    {
      type: "invitesAdded",
      at: 1_000,
      invites: [
        { ...base, id: 1, email: "a@example.com", notifyReferrer: true, status: 0, key: "k".repeat(24) },
      ],
    },
    { type: "multiuseInviteAdded", invite: { ...base, id: 1, key: "m".repeat(24), revoked: false } },
    { type: "inviteRevoked", id: 1, multiuse: true },
  ];
  for (const f of facts) state = realmBehavior.apply(state, f, ref);
  const back = realmBehavior.fromSnapshot(realmBehavior.toSnapshot(state), ref) as RealmState;
  assert.equal(Object.getPrototypeOf(back.invites!.keys), null);
  assert.deepEqual(
    { ...back.invites!.keys },
    { ["k".repeat(24)]: { multiuse: false, id: 1 }, ["m".repeat(24)]: { multiuse: true, id: 1 } },
  );
  assert.equal(back.invites!.multiuse["1"]!.revoked, true);
  assert.equal(back.invites!.email["1"]!.email, "a@example.com");
  assert.deepEqual(back.invites!.sent, [1_000]);
  // A snapshot from before invitations has none.
  const old = realmBehavior.fromSnapshot(
    realmBehavior.toSnapshot(realmBehavior.initial(ref)),
    ref,
  ) as RealmState;
  assert.equal(old.invites, undefined);
});
