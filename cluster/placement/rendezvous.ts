// Rendezvous (highest random weight) placement: each shard goes to the live
// node with the highest hash of (node, shard). A joining node takes about
// 1/N of the shards and nothing else moves; a leaving node's shards spread
// over the rest.
import { fnv1a } from "../addressing.ts";

function weight(node: string, shard: number): number {
  // Mix the two fnv outputs so that nodes whose ids share prefixes still spread.
  let h = fnv1a(`${node}#${shard}`) ^ Math.imul(shard + 1, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

export function ownerOf(shard: number, nodes: readonly string[]): string | null {
  let best: string | null = null;
  let bestW = -1;
  for (const n of nodes) {
    const w = weight(n, shard);
    if (w > bestW || (w === bestW && best !== null && n < best)) {
      best = n;
      bestW = w;
    }
  }
  return best;
}

/** The shards (0..shards-1) that `node` owns among `nodes`. */
export function shardsOwnedBy(node: string, nodes: readonly string[], shards: number): number[] {
  const out: number[] = [];
  for (let s = 0; s < shards; s++) if (ownerOf(s, nodes) === node) out.push(s);
  return out;
}
