// Outgoing email over SMTP (nodemailer), configured with Zulip's setting
// names: EMAIL_HOST, EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD,
// EMAIL_USE_TLS, NOREPLY_EMAIL_ADDRESS. Without EMAIL_HOST nothing is sent:
// the caller logs what would have been (Zulip's development "log email
// backend"), so a server without a mail relay still shows its invitation
// links to whoever reads its log.

import type { Transporter } from "nodemailer";

export interface MailConfig {
  host: string;
  port: number;
  user: string;
  password: string;
  /** STARTTLS required (Django's EMAIL_USE_TLS); false: plain SMTP, no upgrade. */
  useTls: boolean;
  /** The From address of every message. */
  from: string;
}

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  send(m: MailMessage): Promise<void>;
  close(): void;
}

function bool(name: string, dflt: boolean): boolean {
  const v = process.env[name];
  if (v === undefined || v === "") return dflt;
  if (/^(1|true|yes)$/i.test(v)) return true;
  if (/^(0|false|no)$/i.test(v)) return false;
  throw new Error(`${name} must be true or false, got ${v}`);
}

/** The SMTP settings from the environment; null without EMAIL_HOST. */
export function mailConfigFromEnv(): MailConfig | null {
  const host = process.env.EMAIL_HOST ?? "";
  if (host === "") return null;
  const rawPort = process.env.EMAIL_PORT ?? "";
  // Zulip's default: submission with STARTTLS.
  const port = rawPort === "" ? 587 : Number(rawPort);
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    throw new Error(`EMAIL_PORT must be a port number, got ${rawPort}`);
  const external = (process.env.EXTERNAL_HOST ?? "").split(":")[0] || "localhost";
  return {
    host,
    port,
    user: process.env.EMAIL_HOST_USER ?? "",
    password: process.env.EMAIL_HOST_PASSWORD ?? "",
    useTls: bool("EMAIL_USE_TLS", true),
    from: process.env.NOREPLY_EMAIL_ADDRESS || `noreply@${external}`,
  };
}

/** An SMTP mailer for `config`. */
export function smtpMailer(config: MailConfig, timeoutMs = 15_000): Mailer {
  // nodemailer is loaded at the first email, not at every start.
  let transport: Promise<Transporter> | null = null;
  const open = async (): Promise<Transporter> => {
    const { default: nodemailer } = await import("nodemailer");
    return nodemailer.createTransport({
      host: config.host,
      port: config.port,
      // Port 465 speaks TLS from the first byte; elsewhere EMAIL_USE_TLS means STARTTLS.
      secure: config.port === 465,
      requireTLS: config.useTls && config.port !== 465,
      ignoreTLS: !config.useTls && config.port !== 465,
      ...(config.user !== "" ? { auth: { user: config.user, pass: config.password } } : {}),
      connectionTimeout: timeoutMs,
      greetingTimeout: timeoutMs,
      socketTimeout: timeoutMs,
    });
  };
  return {
    async send(m) {
      await (
        await (transport ??= open())
      ).sendMail({
        from: config.from,
        to: m.to,
        subject: m.subject,
        text: m.text,
        html: m.html,
      });
    },
    close() {
      void transport?.then(
        (t) => t.close(),
        () => undefined,
      );
    },
  };
}
