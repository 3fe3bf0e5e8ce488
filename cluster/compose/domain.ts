// The domain's node-side wiring, in one place for every node (embedded,
// cluster, the management CLI's). The runtime (cluster/node.ts,
// cluster/catalog.ts) knows no actor kind: what ties a kind to the node
// registers here, through the node's seams: hand-off subjects
// (NodeRuntime.onHandoff), a kind's hooks (onKind), node services
// (addService), where events go (routeEvents), and workers started on
// shard acquisition (onShardAcquired, onShardLeft).
import { attachRetention } from "../../actors/channel/retention.ts";
import { deliverMessages, MESSAGE_DELIVERY } from "../../actors/channel/delivery.ts";
import {
  MESSAGE_MOVE,
  MOVE_BREADCRUMBS,
  REACTION_PARTICIPATION,
  runBotPosts,
  runBreadcrumbs,
  runMoves,
  runParticipations,
} from "../../actors/channel/index.ts";
import { PUSH_NOTIFY } from "../../actors/channel/push-candidates.ts";
import {
  ACCESS_CHANGE,
  BOT_POSTS,
  emitAccessChangeEvents,
  relayAccessEvents,
} from "../../actors/channel-directory/index.ts";
import type { ZulipError } from "../../actors/errors.ts";
import { typedCall, typedCallAs } from "../../actors/protocol.ts";
import type { Obj } from "../../actors/types.ts";
import { MEMBER_SUBJECTS, runMemberHandoffs } from "../../actors/realm/index.ts";
import { ACCESS_RELAY } from "../../actors/user/index.ts";
import { attachScheduledDelivery } from "../../actors/user/scheduled-delivery.ts";
import { startWebhookWorker, type WebhookWorker, type WebhookWorkerOptions } from "../../webhook/worker.ts";
import { shardOf } from "../addressing.ts";
import { EventRouter, isRouterRef } from "../event-router.ts";
import { startExportWorker } from "../export.ts";
import { startInviteWorker } from "../invite-worker.ts";
import type { NodeRuntime } from "../node.ts";
import { componentLogger } from "../log.ts";
import { startPushWorker } from "../push-worker.ts";

export interface NodeDomain {
  /** Routes every emitted event to its recipients' queue actors (cluster/event-router.ts). */
  router: EventRouter;
}

/**
 * What every node runs beside the actors' turns: the actor-side functions of
 * the hand-offs, the event router with the queue kind's hooks, scheduled
 * messages' delivery and retention sweeps. Call it once, right after the
 * node is made (before it takes shards).
 */
export function attachDomain(node: NodeRuntime): NodeDomain {
  // Sent messages reach their recipients' flags, one call per recipient
  // for a whole batch of sends (actors/channel/delivery.ts).
  const call = typedCall((ref, m, a) => node.call(ref, m, a));
  node.onHandoff(MESSAGE_DELIVERY, (data) => deliverMessages(data, call));
  // Moves between channels, decided by the source's turn and carried out
  // here as the acting user, each step once per move (actors/channel/move.ts).
  const callAs = typedCallAs(node.callAs.bind(node));
  const moves = componentLogger("moves");
  node.onHandoff(MESSAGE_MOVE, (data) =>
    runMoves(data, callAs, (o, step, err) =>
      moves.warn({ move: o.move, step, code: err.code, msg: err.message }, "move step refused"),
    ),
  );
  // A topic moved within its channel: the breadcrumbs its edit decided.
  node.onHandoff(MOVE_BREADCRUMBS, (data) =>
    runBreadcrumbs(data, callAs, (key, err) =>
      moves.warn({ key, code: err.code, msg: err.message }, "breadcrumb refused"),
    ),
  );
  // The Notification Bot's posts the channel directory's createChannel and
  // subscribe decided: new-channel announcements, new-subscription notices.
  const botPosts = componentLogger("notification-bot");
  node.onHandoff(BOT_POSTS, (data) =>
    runBotPosts(data, callAs, (key, err) =>
      botPosts.warn({ key, code: err.code, msg: err.message }, "notification bot post refused"),
    ),
  );
  // A reaction's participation: the reactor's automatic topic policies.
  const topics = componentLogger("auto-topics");
  node.onHandoff(REACTION_PARTICIPATION, (data) =>
    runParticipations(data, call, (p, err) =>
      topics.warn({ user: p.user, key: p.key, code: err.code, msg: err.message }, "participation refused"),
    ),
  );
  // What follows a member's change on the realm: the user actor's copy of
  // the address, the channels a role change brought into or out of view,
  // peer_remove for the deactivated, a new user's default channels, the
  // push devices of an old API key (actors/realm/member-handoffs.ts).
  const members = componentLogger("members");
  const memberRefused = (subject: string, data: Obj, err: ZulipError) =>
    members.warn({ subject, user: data.userId, code: err.code, msg: err.message }, "member hand-off refused");
  for (const subject of MEMBER_SUBJECTS)
    node.onHandoff(subject, (data) => runMemberHandoffs(subject, data, call, memberRefused));
  // Events about a user for the guests who may access them (restricted user access).
  node.onHandoff(ACCESS_RELAY, (data) => relayAccessEvents(data, call));
  // A guest's gained and lost channel peers, less its DM partners (restricted user access).
  node.onHandoff(ACCESS_CHANGE, (data) => emitAccessChangeEvents(data, call));
  // Push notifications go out through the push worker (cluster/push-worker.ts), which
  // replaces this; a node run without one drops them rather than keep them.
  node.onHandoff(PUSH_NOTIFY, () => Promise.resolve(true));
  // Scheduled messages: their delivery attempts and the sweep after a takeover.
  attachScheduledDelivery({
    call,
    callAs: node.callAs.bind(node),
    onHandoff: (subject, handler) => node.onHandoff(subject, handler),
    onShardAcquired: (l) => node.onShardAcquired(l),
    shardOf: (ref) => shardOf(ref, node.shards),
  });
  // Message retention: sweeps of the realms this node serves (actors/channel/retention.ts).
  attachRetention({
    call,
    onShardAcquired: (l) => node.onShardAcquired(l),
    shardOf: (ref) => shardOf(ref, node.shards),
    servingShards: () => node.servingShards(),
    stopped: () => node.stopped,
  });
  const router = new EventRouter({
    nodeId: node.nodeId,
    shards: node.shards,
    serves: (shard) => node.serves(shard),
    request: (req) => node.request(req),
    requestNow: (req) => node.requestNow(req),
    store: node.store,
    epoch: (shard) => node.shardEpoch(shard),
  });
  node.routeEvents(router.route);
  // Another node's events for the users of a shard served here.
  node.addService({ owns: isRouterRef, receive: (req) => router.receive(req.args) });
  node.onShardAcquired((shard) => router.acquiredShard(shard));
  node.onShardLeft((shard) => router.forgetShard(shard));
  // The queue kind: the router's registry of users with queues follows each
  // queue actor's state, and its deliveries live in its shard's event log
  // (cluster/event-log.ts), which the actor replays (Behavior.sideLog).
  const user = (act: { ref: { key: string } }) => Number(act.ref.key);
  node.onKind("queue", {
    settled: (act) => {
      const queues = (act.state as { queues?: unknown[] } | undefined)?.queues;
      router.noteQueues(act.ref, act.shard, queues !== undefined && queues.length > 0);
    },
    beforeAppend: (act, facts) => router.beforeQueueAppend(act.ref, act.shard, facts),
    sideLog: {
      replay: (act, after) => router.log.replay(act.shard, act.ref.realm, user(act), after),
      facts: (act, after, upTo) => router.log.facts(act.shard, act.ref.realm, user(act), after, upTo),
      factsNow: (act, after, upTo) => router.log.factsNow(act.shard, act.ref.realm, user(act), after, upTo),
      head: (act) => router.log.head(act.shard, act.ref.realm, user(act)),
      saved: (act, position) => router.log.saved(act.shard, act.ref.realm, user(act), position),
    },
  });
  return { router };
}

export interface NodeWorkers {
  /** The outgoing-webhook worker (docs/webhooks.md). */
  webhooks: WebhookWorker;
  /**
   * Stop the workers and the node, in order: the webhook and export workers
   * first (they call actors), then the node (its drain still hands
   * invitations and push notifications off), then those two workers.
   */
  close(): Promise<void>;
}

/**
 * The workers of a node that serves clients (embedded and cluster alike; not
 * the management CLI's): outgoing webhooks, invitations, push notifications,
 * exports (to `dataDir`).
 */
export function startNodeWorkers(
  node: NodeRuntime,
  o: { dataDir: string; webhooks?: Partial<WebhookWorkerOptions> },
): NodeWorkers {
  const webhooks = startWebhookWorker(node, o.webhooks);
  const invites = startInviteWorker(node);
  const pushes = startPushWorker(node);
  const exportsWorker = startExportWorker(node, node.store, node.shards, o.dataDir);
  return {
    webhooks,
    async close() {
      await webhooks.stop();
      await exportsWorker.stop();
      await node.stop(true);
      invites.stop();
      pushes.stop();
    },
  };
}
