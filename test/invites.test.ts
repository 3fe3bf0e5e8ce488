// Invitations, black-box: GET/POST /invites, POST /invites/multiuse,
// revoking and resending, with Zulip's errors and the invites_changed
// event; the invitation email received by a real SMTP server (smtp-server)
// through the EMAIL_* settings; and the sign-up page the email's link
// opens, driven in headless Chromium, after which the new user logs in and
// is in the invitation's channels and groups.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startEmbedded, type Creds, type EmbeddedHandle } from "./support/embedded.ts";
import { until } from "./support/ops.ts";
import { assertSuccess, eventsUntil, openQueue } from "./support/zulip-asserts.ts";
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

  test("an email invitation is mailed over SMTP, and its link signs the invitee up", async () => {
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
    const res = await fetch(`${srv.baseUrl}${path}`);
    assert.equal(res.status, 404);
    assert.match(await res.text(), /expired or been deactivated/);
  });
});
