// The node-side invitation worker: the realm actor decides invitations and
// sign-ups (actors/realm/invites.ts) and hands their network work here as
// durable hand-offs, given once the realm's facts are durable and again
// until acknowledged:
//
//   invite.email     send the invitation email over SMTP (cluster/mail.ts),
//                    or log the link when no EMAIL_HOST is set
//   invite.accepted  subscribe the new user to the invitation's channels
//                    and add them to its groups; tell the referrer
//                    (notify_referrer_on_join) by a Notification Bot DM
//   user.welcome     Welcome Bot's direct messages to a new user
//                    (actors/realm/welcome-messages.ts)
//
// A failed send is retried with the outbox's backoff and never blocks the
// API reply (the realm answers before the hand-off runs); after
// MAX_SEND_ATTEMPTS it is logged as given up and acknowledged. A message
// once sent is remembered by its mail id, so a batch given again after a
// partial failure does not mail anyone twice.

import {
  INVITE_ACCEPTED,
  INVITE_EMAIL,
  channelDirectoryRef,
  dmConvRef,
  groupDirectoryRef,
} from "../actors/index.ts";
import type { ChannelProtocol } from "../actors/channel/index.ts";
import type { ArgsOf, TypedCall } from "../actors/protocol.ts";
import { NOTIFICATION_BOT_ID, WELCOME_BOT_ID } from "../actors/realm/system-bot.ts";
import { WELCOME_BOT_DM } from "../actors/realm/welcome-messages.ts";
import type { Obj } from "../actors/types.ts";
import { shardOf } from "./addressing.ts";
import { responseValue } from "./responses.ts";
import type { ActorRequest, ActorResponse } from "./transport/contract.ts";
import { componentLogger, type Logger } from "./log.ts";
import { mailConfigFromEnv, smtpMailer, type MailMessage, type Mailer } from "./mail.ts";
import type { HandoffHandler } from "./node.ts";

/** Sends of one message before it is given up (with the outbox's backoff between). */
export const MAX_SEND_ATTEMPTS = 8;
/** Mail ids remembered as sent; older ones are forgotten first. */
const SENT_MEMORY = 10_000;

export interface InviteWorkerHost {
  call: TypedCall;
  onHandoff(subject: string, handler: HandoffHandler): void;
  /** The referrer's notice is sent with the referrer as the caller (the bot writes to them). */
  request(req: ActorRequest): Promise<ActorResponse>;
  readonly shards: number;
}

export interface InviteWorker {
  /** Whether invitations go out by SMTP (false: their links are logged). */
  readonly smtp: boolean;
  stop(): void;
}

interface InviteMail {
  mailId: string;
  to: string;
  realmName: string;
  referrerName: string;
  referrerEmail: string;
  link: string;
  expiresAt: number | null;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The invitation email, text and HTML. */
export function invitationMessage(m: InviteMail): MailMessage {
  const expiry =
    m.expiresAt === null ? "" : `\nThe link works until ${new Date(m.expiresAt).toUTCString()}.\n`;
  const text =
    `${m.referrerName} (${m.referrerEmail}) has invited you to join ${m.realmName}, a Zulip organization.\n\n` +
    `Create your account here:\n${m.link}\n${expiry}`;
  const html =
    `<p>${escapeHtml(m.referrerName)} (${escapeHtml(m.referrerEmail)}) has invited you to join ` +
    `<b>${escapeHtml(m.realmName)}</b>, a Zulip organization.</p>` +
    `<p><a href="${escapeHtml(m.link)}">Create your account</a></p>` +
    (expiry ? `<p>${escapeHtml(expiry.trim())}</p>` : "");
  return { to: m.to, subject: `${m.referrerName} invited you to join ${m.realmName}`, text, html };
}

/** Start the worker of a node (embedded and cluster alike, cluster/compose/). */
export function startInviteWorker(
  host: InviteWorkerHost,
  o: { mailer?: Mailer | null; log?: Logger } = {},
): InviteWorker {
  const log = o.log ?? componentLogger("mail");
  let mailer: Mailer | null;
  if (o.mailer !== undefined) mailer = o.mailer;
  else {
    const config = mailConfigFromEnv();
    mailer = config === null ? null : smtpMailer(config);
    if (config === null)
      log.info("EMAIL_HOST is not set: invitation emails are not sent, their links are logged instead");
    else
      log.info(
        { host: config.host, port: config.port, tls: config.useTls },
        `sending email through ${config.host}`,
      );
  }
  const sent = new Set<string>();
  const attempts = new Map<string, number>();
  const remember = (id: string) => {
    attempts.delete(id);
    sent.add(id);
    if (sent.size > SENT_MEMORY) sent.delete(sent.values().next().value!);
  };

  host.onHandoff(INVITE_EMAIL, async (data) => {
    let ok = true;
    for (const d of data as unknown as InviteMail[]) {
      if (sent.has(d.mailId)) continue;
      if (mailer === null) {
        log.info({ to: d.to, link: d.link }, `invitation for ${d.to} (no EMAIL_HOST, not sent): ${d.link}`);
        remember(d.mailId);
        continue;
      }
      try {
        await mailer.send(invitationMessage(d));
        remember(d.mailId);
      } catch (err) {
        const n = (attempts.get(d.mailId) ?? 0) + 1;
        if (n >= MAX_SEND_ATTEMPTS) {
          log.error({ err, to: d.to, attempts: n }, `invitation email to ${d.to} given up`);
          remember(d.mailId);
        } else {
          attempts.set(d.mailId, n);
          log.warn({ err, to: d.to, attempt: n }, `invitation email to ${d.to} failed; retrying`);
          ok = false;
        }
      }
    }
    return ok;
  });

  // Zulip's "{user} accepted your invitation to join Zulip!" from the
  // Notification Bot; the send key makes a hand-off given again send nothing new.
  async function notifyReferrer(realmId: number, d: Obj): Promise<void> {
    const referrerId = d.referrerId as number;
    const ref = dmConvRef(realmId, [referrerId, NOTIFICATION_BOT_ID]);
    const res = await host.request({
      ref,
      shard: shardOf(ref, host.shards),
      method: "send",
      args: {
        content: `@_**${String(d.fullName)}|${String(d.userId)}** accepted your invitation to join Zulip!`,
        client: "Internal",
        notification_bot: true,
        read_by_sender: false,
        send_key: `invite-accepted:${String(d.userId)}`,
      } satisfies ArgsOf<ChannelProtocol, "send">,
      caller: { realmId, userId: referrerId, role: Number(d.referrerRole), isBot: false },
      deadline: Date.now() + 30_000,
    });
    // A refusal (the referrer deactivated since) is final; unavailability is retried.
    if (!res.ok && res.kind === "zulip")
      log.warn({ realmId, referrerId, msg: res.msg }, "referrer notice refused");
    else responseValue(res);
  }

  host.onHandoff(INVITE_ACCEPTED, async (data) => {
    for (const d of data) {
      const realmId = d.realmId as number;
      await host.call(channelDirectoryRef(realmId), "joinInvitedChannels", {
        user_id: d.userId as number,
        stream_ids: d.streamIds as number[],
        include_defaults: d.includeDefaults === true,
      });
      await host.call(groupDirectoryRef(realmId), "joinInvitedGroups", {
        user_id: d.userId as number,
        group_ids: d.groupIds as number[],
      });
      if (typeof d.referrerId === "number") await notifyReferrer(realmId, d);
    }
    return true;
  });

  // Each message under its own send key: a hand-off given again sends nothing twice.
  host.onHandoff(WELCOME_BOT_DM, async (data) => {
    for (const d of data) {
      const realmId = d.realmId as number;
      const userId = d.userId as number;
      const ref = dmConvRef(realmId, [userId, WELCOME_BOT_ID]);
      const messages = d.messages as string[];
      for (let i = 0; i < messages.length; i++) {
        const res = await host.request({
          ref,
          shard: shardOf(ref, host.shards),
          method: "send",
          args: {
            content: messages[i]!,
            client: "Internal",
            welcome_bot: true,
            read_by_sender: false,
            send_key: `welcome:${String(userId)}:${String(i)}`,
          } satisfies ArgsOf<ChannelProtocol, "send">,
          caller: { realmId, userId, role: Number(d.role), isBot: false },
          deadline: Date.now() + 30_000,
        });
        // A refusal (the user deactivated meanwhile) is final; unavailability is retried.
        if (!res.ok && res.kind === "zulip") {
          log.warn({ realmId, userId, msg: res.msg }, "welcome message refused");
          break;
        }
        responseValue(res);
      }
    }
    return true;
  });

  return {
    smtp: mailer !== null,
    stop() {
      mailer?.close();
    },
  };
}
