// notify_referrer_on_join, black-box: an invitee signs up through the
// sign-up form's endpoint (POST /accounts/register/, as a browser posts
// it), and the referrer receives the Notification Bot's direct message
// "<mention> accepted your invitation to join Zulip!" (Zulip's text) when
// the invitation asked for it, and nothing when it did not. Embedded, and
// the main flow in cluster mode (nats-server, redis-server, nodes and a
// gateway as processes).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  assertSuccess,
  eventsUntil,
  NOTIFICATION_BOT,
  openQueue,
  requireBinaries,
  startCluster,
  startEmbedded,
  type Api,
  type Creds,
  type EmbeddedHandle,
  type Ev,
  type TestCluster,
} from "./support/index.ts";
import { TestSmtp, linkPath } from "./support/invites.ts";
import { until } from "./support/ops.ts";

const SMTP_USER = "relay-user";
const SMTP_PASSWORD = "relay-secret";
const SMTP_ENV = (port: number): Record<string, string> => ({
  EMAIL_HOST: "127.0.0.1",
  EMAIL_PORT: String(port),
  EMAIL_HOST_USER: SMTP_USER,
  EMAIL_HOST_PASSWORD: SMTP_PASSWORD,
  EMAIL_USE_TLS: "false",
  NOREPLY_EMAIL_ADDRESS: "noreply@referrer.test",
});

/** Invite `email`, read the link from the email, and sign up through the form's POST. */
async function inviteAndSignUp(
  baseUrl: string,
  api: Api,
  smtp: TestSmtp,
  email: string,
  fullName: string,
  params: Record<string, unknown>,
): Promise<number> {
  assertSuccess(await api("POST", "/invites", { invitee_emails: email, stream_ids: [], ...params }));
  const mail = await until(`the invitation to ${email}`, async () => smtp.find(email), 20_000);
  const key = /\/(?:join|accounts\/do_confirm)\/([a-z0-9]+)/.exec(linkPath(mail.text))![1]!;
  const res = await fetch(`${baseUrl}/accounts/register/`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html" },
    body: new URLSearchParams({ key, full_name: fullName, password: `${fullName}-password-1` }).toString(),
  });
  assert.equal(res.status, 200, await res.text());
  const login = await api(
    "POST",
    "/fetch_api_key",
    { username: email, password: `${fullName}-password-1` },
    null,
  );
  assertSuccess(login);
  return login.body.user_id as number;
}

/** The Notification Bot's direct messages to `who`, oldest first. */
async function botDms(api: Api, who: Creds): Promise<Ev[]> {
  const r = await api(
    "GET",
    "/messages",
    {
      anchor: "newest",
      num_before: 50,
      num_after: 0,
      narrow: JSON.stringify([{ operator: "dm", operand: [NOTIFICATION_BOT.id] }]),
    },
    who,
  );
  assertSuccess(r);
  return (r.body.messages as Ev[]).filter((m) => m.sender_id === NOTIFICATION_BOT.id);
}

describe("notify_referrer_on_join (embedded)", () => {
  let srv: EmbeddedHandle;
  let smtp: TestSmtp;
  const saved: Record<string, string | undefined> = {};

  before(async () => {
    smtp = await TestSmtp.start({ user: SMTP_USER, password: SMTP_PASSWORD });
    // The embedded worker reads the mail settings from the environment when it starts.
    for (const [k, v] of Object.entries(SMTP_ENV(smtp.port))) {
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

  test("the referrer gets the Notification Bot's DM when the invitee joins, unless the flag was false", async () => {
    const q = await openQueue(srv, srv.owner, ["message"]);
    const joined = await inviteAndSignUp(srv.baseUrl, srv.api, smtp, "joiner@example.com", "Jo Joiner", {});
    const evs = await eventsUntil(srv, q, (e) => e.some((x: Ev) => x.type === "message"));
    const msg = evs.find((x: Ev) => x.type === "message")!.message as Ev;
    assert.equal(msg.sender_id, NOTIFICATION_BOT.id);
    assert.equal(msg.sender_full_name, "Notification Bot");
    assert.equal(msg.type, "private");
    assert.deepEqual(
      (msg.display_recipient as Ev[]).map((r) => r.id).sort((a: number, b: number) => a - b),
      [srv.owner.userId, NOTIFICATION_BOT.id].sort((a, b) => a - b),
    );
    // Zulip's text, with a silent mention of the new user.
    assert.equal(msg.content, `@_**Jo Joiner|${joined}** accepted your invitation to join Zulip!`);
    // Unread for the referrer; rendered as a silent mention.
    const dms = await botDms(srv.api, srv.owner);
    assert.equal(dms.length, 1);
    assert.match(
      dms[0]!.content as string,
      new RegExp(`class="user-mention silent" data-user-id="${joined}"`),
    );
    assert.ok(!(dms[0]!.flags as string[]).includes("read"));

    // notify_referrer_on_join false: the sign-up works, no message.
    await inviteAndSignUp(srv.baseUrl, srv.api, smtp, "quiet@example.com", "Quiet Joiner", {
      notify_referrer_on_join: false,
    });
    // A later notified sign-up shows the quiet one sent nothing in between.
    await inviteAndSignUp(srv.baseUrl, srv.api, smtp, "second@example.com", "Second Joiner", {
      notify_referrer_on_join: true,
    });
    const after = await botDms(srv.api, srv.owner);
    assert.equal(after.length, 2);
    assert.match(after[1]!.content as string, /Second Joiner/);
    assert.ok(after.every((m) => !(m.content as string).includes("Quiet Joiner")));
  });
});

describe("notify_referrer_on_join (cluster: nats-server, redis-server, two nodes, a gateway)", () => {
  const skip = requireBinaries("nats-server", "redis-server");
  let c: TestCluster;
  let smtp: TestSmtp;

  before(async () => {
    if (skip) return;
    smtp = await TestSmtp.start({ user: SMTP_USER, password: SMTP_PASSWORD });
    c = await startCluster({ env: SMTP_ENV(smtp.port) });
  });

  after(async () => {
    await c?.stop();
    await smtp?.stop();
  });

  test("the referrer gets the DM", { skip }, async () => {
    await inviteAndSignUp(c.baseUrl, c.api, smtp, "clustered@example.com", "Cluster Joiner", {});
    const dms = await until(
      "the referrer notice",
      async () => {
        const got = await botDms(c.api, c.owner);
        return got.length ? got : undefined;
      },
      20_000,
    );
    assert.equal(dms.length, 1);
    assert.match(dms[0]!.content as string, /Cluster Joiner.*accepted your invitation to join Zulip!/s);
  });
});
