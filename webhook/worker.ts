// The node-side outgoing-webhook worker (Zulip's outgoing_webhooks queue
// worker): one per node, started beside the NodeRuntime in embedded and in
// cluster mode. Actors never touch the network, so the HTTP exchange happens
// here, between two turns of the bot's webhook actor:
//
//   send turn ──hand-off webhook.trigger──▶ worker ──enqueue──▶ webhook actor
//   webhook actor ──notice webhook.ready──▶ worker ──claim──▶ (journaled "attempting")
//   worker: POST ... reply/failure messages as the bot ──report──▶ webhook actor
//   webhook actor ──notice webhook.idle──▶ worker ──clear──▶ realm's webhook index
//   shard acquired ──▶ worker ──pendingBots──▶ index; ──poke──▶ those bots
//
// Notices and hand-offs are node-local (NodeRuntime.onNotice / onHandoff):
// the node whose turn decided them acts on them. The trigger is a durable
// hand-off: the conversation's outbox keeps it until every bot's enqueue
// succeeded (enqueue is idempotent by message id). Concurrency is bounded
// twice: the actor hands out at most PER_BOT_CONCURRENCY attempts of one bot
// (over all nodes), and this worker runs at most `concurrency` POSTs at once
// (over all bots).

import {
  IDLE_NOTICE,
  READY_NOTICE,
  TRIGGER_NOTICE,
  ZULIP_VERSION,
  channelConvRef,
  dmConvRef,
  realmDirectoryRef,
  realmRef,
  webhookIndexRef,
  webhookRef,
} from "../actors/index.ts";
import type { ChannelProtocol } from "../actors/channel/index.ts";
import {
  typedCall,
  type ArgsOf,
  type MethodOf,
  type Protocol,
  type Ref,
  type ReplyOf,
  type TypedCall,
} from "../actors/protocol.ts";
import type { ActorRef, Caller, Obj } from "../actors/types.ts";
import { shardOf } from "../cluster/addressing.ts";
import type { HandoffHandler, NodeRuntime } from "../cluster/node.ts";
import { responseValue } from "../cluster/responses.ts";
import { ZulipError } from "../actors/errors.ts";
import { allowedNetworksFromEnv, Egress, proxyUrlFromEnv } from "./egress.ts";
import { makeTraceparent, postWebhook, type PostResult } from "./http.ts";
import {
  GENERIC_INTERFACE,
  ReplyFormatError,
  SLACK_INTERFACE,
  SLACK_NO_DM,
  genericBody,
  messageUrl,
  ownerNoticeText,
  replyContent,
  slackBody,
  type BotInfo,
  type DeliveryView,
  type OwnerNotice,
} from "./payload.ts";
import { componentLogger, type Logger } from "../cluster/log.ts";

/** Read at each use (errors are rare): the root logger may be replaced (setRootLogger). */
const log = (): Logger => componentLogger("webhook");

/** What the worker needs of a node. */
export interface WorkerHost {
  call: TypedCall;
  /** A call on behalf of a user (the bot posting its reply), typed by the kind's protocol. */
  callAs<P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
    caller: Caller,
  ): Promise<ReplyOf<P, M>>;
  onNotice(l: (subject: string, data: Obj) => void): void;
  /** Durable hand-offs of a subject (the triggers); true acknowledges. */
  onHandoff(subject: string, handler: HandoffHandler): void;
  /** This node started serving a shard. */
  onShardAcquired(l: (shard: number) => void): void;
  /** The cluster's shard count (to tell which bots a shard holds). */
  readonly shards: number;
}

/** The worker's view of a NodeRuntime. */
export function nodeHost(node: NodeRuntime, callTimeoutMs = 10_000): WorkerHost {
  return {
    call: typedCall((ref, method, args) => node.call(ref, method, args)),
    // Typed by its signature, as `typedCall` types a plain call.
    callAs: (async (ref: ActorRef, method: string, args: Obj, caller: Caller) =>
      responseValue(
        await node.request({
          ref,
          shard: shardOf(ref, node.shards),
          method,
          args,
          caller,
          deadline: Date.now() + callTimeoutMs,
        }),
      )) as WorkerHost["callAs"],
    onNotice: (l) => node.onNotice(l),
    onHandoff: (subject, handler) => node.onHandoff(subject, handler),
    onShardAcquired: (l) => node.onShardAcquired(l),
    shards: node.shards,
  };
}

/** Start the worker of a node: embedded and cluster alike (cluster/compose/). */
export function startWebhookWorker(node: NodeRuntime, o: Partial<WebhookWorkerOptions> = {}): WebhookWorker {
  const w = new WebhookWorker(nodeHost(node), { ...webhookOptionsFromEnv(), ...o });
  w.start();
  return w;
}

export interface WebhookWorkerOptions {
  /** Zulip's OUTGOING_WEBHOOK_TIMEOUT_SECONDS = 10, for the whole exchange. */
  timeoutMs: number;
  /** Responses longer than this are refused (not read further). */
  maxResponseBytes: number;
  /** POSTs in flight at once on this node, over all bots. */
  concurrency: number;
  /** Backoff before retry n (1-based): base * 2^(n-1). Zulip re-queues at once (0). */
  retryBaseMs: number;
  /** Scheme of the realm's URL in the owner's notice (realm host from the realm actor). */
  realmScheme: string;
  /**
   * Networks (CIDR) bots may reach despite the default refusal of loopback,
   * private, link-local and other internal ranges (egress.ts).
   */
  allowedNetworks: string[];
  /** An egress proxy every POST goes through (it then decides which destinations are allowed). */
  proxyUrl: string | null;
}

export const DEFAULT_WEBHOOK_OPTIONS: WebhookWorkerOptions = {
  timeoutMs: 10_000,
  maxResponseBytes: 1 << 20,
  concurrency: 32,
  retryBaseMs: 1_000,
  realmScheme: "http",
  allowedNetworks: [],
  proxyUrl: null,
};

function envInt(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${v}`);
  return n;
}

/** Options from the environment (WEBHOOK_* in the README's configuration table). */
export function webhookOptionsFromEnv(): WebhookWorkerOptions {
  const d = DEFAULT_WEBHOOK_OPTIONS;
  return {
    timeoutMs: envInt("WEBHOOK_TIMEOUT_MS", d.timeoutMs),
    maxResponseBytes: envInt("WEBHOOK_MAX_RESPONSE_BYTES", d.maxResponseBytes),
    concurrency: Math.max(1, envInt("WEBHOOK_CONCURRENCY", d.concurrency)),
    retryBaseMs: envInt("WEBHOOK_RETRY_BASE_MS", d.retryBaseMs),
    realmScheme: process.env.WEBHOOK_REALM_SCHEME || d.realmScheme,
    allowedNetworks: allowedNetworksFromEnv(),
    proxyUrl: proxyUrlFromEnv(),
  };
}

const CLIENT = "OutgoingWebhookResponse";
/** Shard acquisitions within this long are swept together. */
const SWEEP_DELAY_MS = 200;
/** Tries of a trigger's enqueue or a sweep's read before leaving it for later (~1 min). */
const TRIES = 30;
const RETRY_MS = 2_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const OUTGOING_WEBHOOK_BOT = 3;

/** What the bot posts and tells its owner when a delivery ends in failure. */
interface Failure {
  message: string;
  owner: OwnerNotice;
}

export class WebhookWorker {
  private readonly o: WebhookWorkerOptions;
  private readonly egress: Egress;
  /** Slots taken: POSTs running plus slots reserved by claims in flight. */
  private active = 0;
  private stopped = false;
  private readonly running = new Set<Promise<void>>();
  /** Bots with due work that found no free slot; pumped as slots free up. */
  private readonly waiting = new Map<string, [number, number]>();
  private readonly claiming = new Set<string>();
  private readonly again = new Set<string>();
  /** Shards acquired since the last sweep, and its pending timer. */
  private sweepShards = new Set<number>();
  private sweepTimer: NodeJS.Timeout | null = null;
  readonly stats = { posts: 0, replies: 0, failures: 0, retries: 0, sweeps: 0, resumed: 0 };

  constructor(
    private readonly host: WorkerHost,
    o: Partial<WebhookWorkerOptions> = {},
  ) {
    this.o = { ...DEFAULT_WEBHOOK_OPTIONS, ...o };
    // Built here so a bad network or proxy URL stops the node's start.
    this.egress = new Egress({
      allowedNetworks: this.o.allowedNetworks,
      proxyUrl: this.o.proxyUrl,
    });
  }

  start(): void {
    this.host.onNotice((subject, data) => {
      if (this.stopped) return;
      if (subject === READY_NOTICE) void this.pump(Number(data.realmId), Number(data.botId));
      else if (subject === IDLE_NOTICE) void this.clear(data);
    });
    this.host.onHandoff(TRIGGER_NOTICE, async (data) =>
      (await Promise.all(data.map((d) => this.forward(d)))).every(Boolean),
    );
    this.host.onShardAcquired((shard) => {
      if (this.stopped) return;
      this.sweepShards.add(shard);
      this.sweepTimer ??= setTimeout(() => void this.sweep(), SWEEP_DELAY_MS);
    });
  }

  /** Stop taking work; wait for the POSTs in flight to finish and report. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sweepTimer) clearTimeout(this.sweepTimer);
    this.sweepTimer = null;
    await Promise.allSettled([...this.running]);
    await this.egress.close().catch(() => undefined);
  }

  /**
   * A message triggered bots (a hand-off from the conversation's outbox):
   * journal one delivery per bot in its webhook actor. True once every bot
   * has it (or refused it for good); false leaves the hand-off in the
   * outbox, given again at the conversation's next activation.
   */
  private async forward(data: Obj): Promise<boolean> {
    const realmId = Number(data.realmId);
    const message = data.message as Obj;
    const jobs = ((data.bots ?? []) as Obj[]).map((b) =>
      this.retrying(`queue message ${String(message.id)} for bot ${String(b.botId)}`, () =>
        this.host.call(webhookRef(realmId, Number(b.botId)), "enqueue", {
          messageId: Number(message.id),
          trigger: b.trigger as string,
          message,
        }),
      ),
    );
    return (await Promise.all(jobs)).every(Boolean);
  }

  /** Run `f` until it succeeds or fails for good (a Zulip error); false when it never did. */
  private async retrying(what: string, f: () => Promise<unknown>): Promise<boolean> {
    for (let i = 0; i < TRIES && !this.stopped; i++) {
      try {
        await f();
        return true;
      } catch (err) {
        if (err instanceof ZulipError) {
          log().warn({ err: err.message }, `could not ${what}`);
          return true;
        }
        if (i === TRIES - 1) log().warn({ err }, `could not ${what}; left for later`);
        else await sleep(RETRY_MS);
      }
    }
    return false;
  }

  /** A bot has nothing pending at `gen`: drop it from the realm's index (a failure only costs a poke later). */
  private async clear(data: Obj): Promise<void> {
    try {
      await this.host.call(webhookIndexRef(Number(data.realmId)), "clear", {
        botId: Number(data.botId),
        gen: Number(data.gen),
      });
    } catch {
      // The mark stays; the next sweep pokes the bot, which announces itself idle again.
    }
  }

  /**
   * This node took over shards: timers of their webhook actors died with
   * the previous owner (or never existed, at start-up). Poke every bot of
   * those shards that the realm's index lists; the poke sweeps attempts
   * past their deadline, re-arms timers and announces due work.
   */
  private async sweep(): Promise<void> {
    this.sweepTimer = null;
    const shards = this.sweepShards;
    this.sweepShards = new Set();
    if (this.stopped || shards.size === 0) return;
    this.stats.sweeps++;
    let realms: { realmId: number }[] = [];
    await this.retrying("list the realms for the webhook sweep", async () => {
      realms = await this.host.call(realmDirectoryRef(), "listRealms", {});
    });
    await Promise.all(
      realms.map(async ({ realmId }) => {
        let bots: { botId: number }[] = [];
        await this.retrying(`read the webhook index of realm ${realmId}`, async () => {
          bots = (await this.host.call(webhookIndexRef(realmId), "pendingBots", {})).bots;
        });
        for (const b of bots) {
          const ref = webhookRef(realmId, b.botId);
          if (!shards.has(shardOf(ref, this.host.shards))) continue;
          this.stats.resumed++;
          // A failure means the shard moved on again: its next owner sweeps it.
          await this.host.call(ref, "poke", {}).catch(() => undefined);
        }
      }),
    );
  }

  private async pump(realmId: number, botId: number): Promise<void> {
    const key = `${realmId}:${botId}`;
    if (this.stopped) return;
    if (this.claiming.has(key)) {
      this.again.add(key);
      return;
    }
    const free = this.o.concurrency - this.active;
    if (free <= 0) {
      this.waiting.set(key, [realmId, botId]);
      return;
    }
    this.claiming.add(key);
    this.active += free;
    let got = 0;
    try {
      const r = await this.host.call(webhookRef(realmId, botId), "claim", {
        max: free,
        timeoutMs: this.o.timeoutMs,
      });
      got = r.deliveries.length;
      for (const d of r.deliveries) {
        const p = this.run(realmId, botId, d)
          .catch((err) => log().warn({ err, bot: botId, message: d.messageId }, "delivery failed"))
          .finally(() => {
            this.running.delete(p);
            this.active--;
            this.next();
          });
        this.running.add(p);
      }
    } catch (err) {
      log().warn({ err, bot: botId }, "claim failed");
    } finally {
      this.active -= free - got;
      this.claiming.delete(key);
      if (this.again.delete(key)) void this.pump(realmId, botId);
      else if (free - got > 0) this.next();
    }
  }

  private next(): void {
    if (this.stopped || this.active >= this.o.concurrency) return;
    const first = this.waiting.entries().next();
    if (first.done) return;
    this.waiting.delete(first.value[0]);
    void this.pump(...first.value[1]);
  }

  private async report(
    realmId: number,
    botId: number,
    d: DeliveryView,
    outcome: "retry" | "done" | "dropped",
    extra: { retryAfterMs?: number } = {},
  ) {
    return await this.host.call(webhookRef(realmId, botId), "report", {
      messageId: d.messageId,
      attempt: d.attempt,
      outcome,
      ...extra,
    });
  }

  /** One attempt of one delivery, and everything that follows from its outcome. */
  private async run(realmId: number, botId: number, d: DeliveryView): Promise<void> {
    const bot = await this.host.call(realmRef(realmId), "webhookBot", { botId });
    // The bot was deactivated or is no longer an outgoing webhook: nothing to send.
    if (!bot.found || !bot.isActive || bot.botType !== OUTGOING_WEBHOOK_BOT || !bot.service) {
      await this.report(realmId, botId, d, "dropped");
      return;
    }
    const service = bot.service;
    if (service.interface === SLACK_INTERFACE && d.message.type === "private") {
      await this.postAsBot(realmId, bot, d.message, "Failure! " + SLACK_NO_DM);
      await this.report(realmId, botId, d, "done");
      return;
    }
    const req =
      service.interface === SLACK_INTERFACE
        ? slackBody(bot, service.token, realmId, d)
        : genericBody(bot, service.token, d);
    this.stats.posts++;
    const res = await postWebhook({
      url: service.baseUrl,
      body: req.body,
      contentType: req.contentType,
      userAgent: `ZulipOutgoingWebhook/${ZULIP_VERSION}`,
      timeoutMs: this.o.timeoutMs,
      maxResponseBytes: this.o.maxResponseBytes,
      traceparent: makeTraceparent(),
      dispatcher: this.egress.dispatcher(),
    });
    const retryable = this.retryable(res);
    if (retryable) {
      const r = await this.report(realmId, botId, d, "retry", {
        retryAfterMs: this.o.retryBaseMs * 2 ** d.failures,
      });
      if (r.accepted && r.exhausted) await this.fail(realmId, bot, d, retryable);
      else this.stats.retries++;
      return;
    }
    await this.conclude(realmId, bot, d, res);
    await this.report(realmId, botId, d, "done");
  }

  /**
   * Zulip retries timeouts and connection errors; 5xx answers are retried
   * too (the issue asks for it; Zulip 10 fails them at once). The failure
   * returned is what happens once the retries are used up.
   */
  private retryable(res: PostResult): Failure | null {
    if (res.kind === "timeout") {
      const secs = this.o.timeoutMs / 1000;
      return {
        message: "Bot is unavailable",
        owner: { failureMessage: `Request timed out after ${secs} seconds.` },
      };
    }
    if (res.kind === "connection") {
      return {
        message: "Bot is unavailable",
        owner: { failureMessage: "A connection error occurred. Is my bot server down?" },
      };
    }
    if (res.kind === "response" && res.status >= 500 && res.status <= 599) {
      return {
        message: `Third party responded with ${res.status}`,
        owner: { statusCode: res.status, responseContent: { text: res.text, bytes: true } },
      };
    }
    return null;
  }

  /** The final outcome of an attempt that is not retried (Zulip's do_rest_call). */
  private async conclude(realmId: number, bot: BotInfo, d: DeliveryView, res: PostResult): Promise<void> {
    if (res.kind === "response" && res.status >= 200 && res.status <= 299) {
      let content: string | null;
      try {
        content = replyContent(bot.service!.interface ?? GENERIC_INTERFACE, res.text);
      } catch (err) {
        if (!(err instanceof ReplyFormatError)) throw err;
        await this.fail(realmId, bot, d, {
          message: err.message,
          owner: {
            responseContent: { text: res.text, bytes: false },
            failureMessage:
              "The outgoing webhook server attempted to send a message in Zulip, but that request " +
              `resulted in the following error:\n> ${err.message}`,
          },
        });
        return;
      }
      if (content !== null) {
        await this.postAsBot(realmId, bot, d.message, content);
        this.stats.replies++;
      }
      return;
    }
    if (res.kind === "disallowed") {
      // Reported as Zulip reports Smokescreen's refusal (a 407 answer), so
      // the bot's owner reads "... for a private or disallowed network."
      log().warn({ bot: bot.botId, detail: res.detail }, "bot server call failed");
      await this.fail(realmId, bot, d, {
        message: "Third party responded with 407",
        owner: { statusCode: 407 },
      });
      return;
    }
    if (res.kind === "response") {
      // 1xx, 3xx (redirects are not followed) and 4xx.
      await this.fail(realmId, bot, d, {
        message: `Third party responded with ${res.status}`,
        owner: { statusCode: res.status, responseContent: { text: res.text, bytes: true } },
      });
      return;
    }
    const name = res.kind === "error" ? res.name : "RequestException";
    const detail = res.kind === "error" ? res.detail : "";
    await this.fail(realmId, bot, d, {
      message:
        `An exception of type *${name}* occurred for message \`${String(d.message.content ?? "")}\`! ` +
        "See the Zulip server logs for more information.",
      owner: { exception: { name, text: detail } },
    });
  }

  /** Zulip's fail_with_message + notify_bot_owner. */
  private async fail(realmId: number, bot: BotInfo, d: DeliveryView, f: Failure): Promise<void> {
    this.stats.failures++;
    await this.postAsBot(realmId, bot, d.message, "Failure! " + f.message);
    if (bot.ownerId === null) return;
    const url = messageUrl(`${this.o.realmScheme}://${bot.realmHost}`, d.message);
    const text = ownerNoticeText(url, bot.fullName, f.owner);
    await this.send(dmConvRef(realmId, [bot.botId, bot.ownerId]), bot, realmId, { content: text });
  }

  /** Post as the bot into the triggering message's conversation (Zulip's send_response_message). */
  private async postAsBot(realmId: number, bot: BotInfo, m: Obj, content: string): Promise<void> {
    if (m.type === "stream") {
      const ref = channelConvRef(realmId, Number(m.stream_id));
      await this.send(ref, bot, realmId, { content, topic: String(m.subject ?? "") });
    } else {
      const ids = ((m.display_recipient ?? []) as Obj[]).map((r) => Number(r.id));
      if (!ids.includes(bot.botId)) ids.push(bot.botId);
      await this.send(dmConvRef(realmId, ids), bot, realmId, { content });
    }
  }

  private async send(
    ref: Ref<ChannelProtocol>,
    bot: BotInfo,
    realmId: number,
    args: { content: string; topic?: string },
  ): Promise<void> {
    const caller: Caller = { realmId, userId: bot.botId, role: bot.role, isBot: true };
    try {
      await this.host.callAs(ref, "send", { ...args, client: CLIENT }, caller);
    } catch (err) {
      // Like Zulip, a reply that cannot be posted (channel gone, no
      // permission) ends the delivery all the same.
      log().warn({ bot: bot.botId, err: (err as Error).message }, "could not post the bot's reply");
    }
  }
}
