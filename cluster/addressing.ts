// Where an actor lives: its shard and its NATS subject.
import type { ActorRef } from "../actors/types.ts";

/** A cluster's shards: its unit of placement over nodes, so many more than the nodes it will have. */
export const DEFAULT_SHARDS = 256;
/**
 * A new embedded DATA_DIR's shards: one process holds them all, so they
 * place nothing, and fewer cost less per event. A message makes a log
 * entry per shard its online recipients live on (cluster/event-log.ts):
 * with 1,000 online recipients, 256 entries at 256 shards, 16 at 16.
 */
export const EMBEDDED_SHARDS = 16;

/** FNV-1a, 32 bit: stable across processes and versions (placement depends on it). */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function shardOf(ref: ActorRef, shards: number): number {
  return fnv1a(`${ref.realm}:${ref.shardKey ?? ref.key}`) % shards;
}

/** Stable storage id of an actor, e.g. "user.1.42". */
export function actorId(ref: ActorRef): string {
  return `${ref.kind}.${ref.realm}.${ref.key}`;
}

/** NATS subject of an actor: act.<shard>.<kind>.<realm>.<key> (key escaped for NATS tokens). */
export function actorSubject(ref: ActorRef, shard: number): string {
  return `act.${shard}.${ref.kind}.${ref.realm}.${encodeToken(ref.key)}`;
}

/** Subject wildcard that covers every actor of a shard. */
export function shardSubject(shard: number): string {
  return `act.${shard}.>`;
}

function encodeToken(s: string): string {
  return /^[A-Za-z0-9_-]+$/.test(s) ? s : `~${Buffer.from(s).toString("base64url")}`;
}
