// The cluster bus: subject-addressed byte messages over one NATS connection.
// The same connection carries the node-to-node actor path (nats-actor.ts).
import {
  connect,
  credsAuthenticator,
  type NatsConnection,
  type Subscription as NatsSubscription,
} from "@nats-io/transport-node";
import type { NatsSecurity } from "../config.ts";
import type { Bus, Subscription } from "./contract.ts";
import { componentLogger } from "../log.ts";

let openConnections = 0;

/** NATS connections opened by connectNats and not yet closed (for leak checks). */
export function openNatsConnections(): number {
  return openConnections;
}

/** Split "nats://a:4222,nats://b:4222" (or a list of such strings) into server URLs. */
export function natsServers(url: string | string[]): string[] {
  const parts = (Array.isArray(url) ? url : [url]).flatMap((u) => u.split(","));
  return parts.map((u) => u.trim()).filter((u) => u.length > 0);
}

/**
 * Connect to a NATS server or cluster. Reconnects forever (250 ms apart) once
 * connected; the initial connect fails fast so a misconfigured process exits.
 * `security` is the authentication and TLS part (cluster/config.ts natsSecurity()).
 */
export async function connectNats(
  url: string | string[],
  name: string,
  security: NatsSecurity = {},
): Promise<NatsConnection> {
  const servers = natsServers(url);
  if (servers.length === 0) throw new Error("connectNats: no NATS server URL given");
  const { creds, ...options } = security;
  if (creds !== undefined) options.authenticator = credsAuthenticator(creds);
  const nc = await connect({
    ...options,
    servers,
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
    pingInterval: 10_000,
    maxPingOut: 3,
  });
  openConnections++;
  void nc.closed().then(() => {
    openConnections--;
  });
  return nc;
}

/** How long `passedOn` waits for the server's answer. */
const FLUSH_WAIT_MS = 1_000;

export class NatsBus implements Bus {
  constructor(readonly nc: NatsConnection) {}

  static async connect(url: string | string[], name: string, security: NatsSecurity = {}): Promise<NatsBus> {
    return new NatsBus(await connectNats(url, name, security));
  }

  publish(subject: string, data: Uint8Array): void {
    // Fire and forget, like every bus message: a closed connection drops it.
    if (this.nc.isClosed()) return;
    try {
      this.nc.publish(subject, data);
    } catch (err) {
      // Draining or closed between the check and the call; or, a bug, over
      // the server's max_payload (bus messages are small: actor calls carry
      // the large ones, in parts).
      const max = this.nc.info?.max_payload;
      if (max !== undefined && data.length > max)
        componentLogger("bus").error(
          { err, subject, bytes: data.length },
          "bus message over max_payload dropped",
        );
    }
  }

  passedOn(): Promise<void> {
    if (this.nc.isClosed()) return Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const away = new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_WAIT_MS)));
    return Promise.race([this.nc.flush().catch(() => {}), away]).finally(() => clearTimeout(timer));
  }

  subscribe(subject: string, onMessage: (data: Uint8Array, subject: string) => void): Subscription {
    const sub: NatsSubscription = this.nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        try {
          onMessage(msg.data, msg.subject);
        } catch (e) {
          componentLogger("bus").error({ err: e, subject }, "bus subscriber threw");
        }
      },
    });
    return {
      unsubscribe: () => {
        if (sub.isClosed()) return;
        try {
          sub.unsubscribe();
        } catch {
          // connection already closed
        }
      },
    };
  }

  /** Resolves once the server has processed everything sent so far (subscriptions included). */
  flush(): Promise<void> {
    return this.nc.flush();
  }

  /** Deliver what is in flight, then close. */
  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close();
    }
  }
}
