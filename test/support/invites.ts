// Invitation test helpers: a real SMTP server (the `smtp-server` package)
// that keeps what it receives, the sign-up link read from an email, and a
// headless Chromium driven over the DevTools protocol (fill a form, submit,
// read the page), for the sign-up page.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";
import { WebSocket } from "undici";

export interface ReceivedMail {
  from: string;
  to: string[];
  authUser: string | null;
  raw: string;
  /** The raw message with quoted-printable soft breaks and escapes undone. */
  text: string;
}

function decodeQuotedPrintable(s: string): string {
  return s
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

export class TestSmtp {
  readonly mails: ReceivedMail[] = [];
  private server!: SMTPServer;
  port = 0;
  /** Refuse this many next messages with a temporary failure (451). */
  rejectNext = 0;
  rejected = 0;
  private constructor() {}

  /** Listening on a free port of 127.0.0.1; plain SMTP, AUTH with the given user. */
  static async start(auth: { user: string; password: string }): Promise<TestSmtp> {
    const t = new TestSmtp();
    const server = new SMTPServer({
      disabledCommands: ["STARTTLS"],
      allowInsecureAuth: true,
      authOptional: false,
      logger: false,
      onAuth(a, _session, cb) {
        if (a.username === auth.user && a.password === auth.password) cb(null, { user: a.username });
        else cb(new Error("Invalid username or password"));
      },
      onData(stream, session, cb) {
        if (t.rejectNext > 0) {
          t.rejectNext--;
          t.rejected++;
          stream.resume();
          stream.on("end", () => cb(Object.assign(new Error("try again later"), { responseCode: 451 })));
          return;
        }
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          const raw = Buffer.concat(chunks).toString("utf8");
          t.mails.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            to: session.envelope.rcptTo.map((r) => r.address),
            authUser: typeof session.user === "string" ? session.user : null,
            raw,
            text: decodeQuotedPrintable(raw),
          });
          cb();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    t.server = server;
    t.port = (server.server.address() as AddressInfo).port;
    return t;
  }

  /** The latest mail to `address`, if any. */
  find(address: string): ReceivedMail | undefined {
    return [...this.mails].reverse().find((m) => m.to.includes(address));
  }

  count(address: string): number {
    return this.mails.filter((m) => m.to.includes(address)).length;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The path of the first sign-up link in a mail (its host is the organization's, not the test server's). */
export function linkPath(text: string): string {
  const m = /https?:\/\/[^/\s"<>]+(\/(?:accounts\/do_confirm\/|join\/)[a-z0-9]+\/?)/.exec(text);
  if (!m) throw new Error(`no sign-up link in: ${text.slice(0, 2000)}`);
  return m[1]!;
}

/** A page under the DevTools protocol: commands, and waiting for events. */
export class CdpPage {
  private seq = 0;
  private readonly pending = new Map<number, (r: { result?: unknown; error?: unknown }) => void>();
  private readonly waiters: { method: string; resolve: () => void }[] = [];
  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener("message", (ev) => {
      const msg = JSON.parse(String(ev.data)) as {
        id?: number;
        method?: string;
        result?: unknown;
        error?: unknown;
      };
      if (msg.id !== undefined) {
        this.pending.get(msg.id)?.(msg);
        this.pending.delete(msg.id);
      } else if (msg.method) {
        for (let i = this.waiters.length - 1; i >= 0; i--) {
          if (this.waiters[i]!.method === msg.method) this.waiters.splice(i, 1)[0]!.resolve();
        }
      }
    });
  }

  static async connect(url: string): Promise<CdpPage> {
    const ws = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener("open", () => resolve());
      ws.addEventListener("error", () => reject(new Error("DevTools websocket failed")));
    });
    return new CdpPage(ws);
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(id, (r) => (r.error ? reject(new Error(JSON.stringify(r.error))) : resolve(r.result)));
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Resolves at the next `method` event (register before causing it). */
  next(method: string, timeoutMs = 30_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${method} within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        method,
        resolve: () => {
          clearTimeout(t);
          resolve();
        },
      });
    });
  }

  async evaluate(expression: string): Promise<unknown> {
    const r = (await this.send("Runtime.evaluate", { expression, returnByValue: true })) as {
      result: { value?: unknown };
      exceptionDetails?: unknown;
    };
    if (r.exceptionDetails) throw new Error(`evaluate failed: ${JSON.stringify(r.exceptionDetails)}`);
    return r.result.value;
  }

  async html(): Promise<string> {
    return String(await this.evaluate("document.documentElement.outerHTML"));
  }

  close(): void {
    this.ws.close();
  }
}

/**
 * Fill the sign-up form's fields (by name) and submit it as a user would
 * (the submit button), then wait for the answer page to load.
 */
export async function fillAndSubmit(page: CdpPage, fields: Record<string, string>): Promise<void> {
  const loaded = page.next("Page.loadEventFired");
  await page.evaluate(`(() => {
    const form = document.getElementById("signup");
    for (const [name, value] of Object.entries(${JSON.stringify(fields)})) form.elements[name].value = value;
    document.getElementById("submit").click();
  })()`);
  await loaded;
}

/**
 * Open `url` in a fresh headless Chromium, run `act` on the loaded page,
 * and return the page's HTML afterwards. The browser is stopped by pid.
 */
export async function driveSignup(url: string, act: (page: CdpPage) => Promise<void>): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), "chromium-invite-"));
  let child: ChildProcess | null = null;
  let page: CdpPage | null = null;
  try {
    child = spawn(
      "chromium",
      [
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--remote-debugging-port=0",
        `--user-data-dir=${profile}`,
        "about:blank",
      ],
      // Its own process group, so the renderer and zygote it forks are
      // stopped with it and stop writing into the profile directory.
      { stdio: ["ignore", "ignore", "pipe"], detached: true },
    );
    const browserWs = await new Promise<string>((resolve, reject) => {
      let err = "";
      const t = setTimeout(() => reject(new Error(`chromium did not start: ${err}`)), 60_000);
      child!.stderr!.on("data", (c: Buffer) => {
        err += c.toString();
        const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
        if (m) {
          clearTimeout(t);
          resolve(m[1]!);
        }
      });
      child!.on("exit", () => reject(new Error(`chromium exited: ${err}`)));
    });
    const httpBase = browserWs.replace(/^ws:/, "http:").replace(/\/devtools\/browser\/.*$/, "");
    let target: { type: string; webSocketDebuggerUrl: string } | undefined;
    for (let i = 0; i < 100 && !target; i++) {
      const list = (await (await fetch(`${httpBase}/json/list`)).json()) as {
        type: string;
        webSocketDebuggerUrl: string;
      }[];
      target = list.find((t) => t.type === "page");
      if (!target) await new Promise((r) => setTimeout(r, 100));
    }
    if (!target) throw new Error("chromium has no page");
    page = await CdpPage.connect(target.webSocketDebuggerUrl);
    await page.send("Page.enable");
    const loaded = page.next("Page.loadEventFired");
    await page.send("Page.navigate", { url });
    await loaded;
    await act(page);
    return await page.html();
  } finally {
    page?.close();
    if (child?.pid !== undefined) {
      const exited = child.exitCode === null ? new Promise((r) => child!.once("exit", r)) : null;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // The whole group has already gone.
      }
      await exited;
    }
    // A child that has not yet seen the signal can still be writing a file.
    rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  }
}
