// The gateway's ActorClient: finds the owner of a request's shard by
// rendezvous hashing over the live nodes that membership reports, and sends
// through that node's GrpcNodeClient. On "moved", or when the node could not
// be reached or no node is live, it waits (25 -> 200 ms) and retries with
// fresh placement until the request's deadline, then answers "unavailable".
// The deadline bounds the retries only: an attempt that reached a node is
// awaited by GrpcNodeClient until deadline + grace (retry.ts), so a turn that
// started in time is answered with its outcome, not with a 503.
import { DEFAULT_SHARDS } from "../addressing.ts";
import type { Membership } from "../membership.ts";
import { ownerOf } from "../placement/rendezvous.ts";
import type { ActorClient, ActorRequest, ActorResponse } from "./contract.ts";
import { GrpcNodeClient, type GrpcNodeClientOptions } from "./grpc-client.ts";
import { BACKOFF_MIN_MS, CONNECTION_LOST, delay, nextBackoff, unavailable } from "./retry.ts";

/** A final answer (not "moved", not a lost connection): no retry. */
function settled(res: ActorResponse): boolean {
  return res !== CONNECTION_LOST && (res.ok || res.kind !== "moved");
}

export class ClusterClient implements ActorClient {
  private readonly pool = new Map<string, GrpcNodeClient>();
  /** Owner per shard for `placedFor` (filled lazily); reset when the owner set changes. */
  private table: (string | null | undefined)[];
  private placedFor: string[] | null = null;
  private readonly offChange: () => void;
  private closed = false;

  constructor(
    private readonly membership: Membership,
    private readonly shards: number = DEFAULT_SHARDS,
    private readonly nodeOptions: GrpcNodeClientOptions = {},
  ) {
    this.table = new Array(shards);
    this.offChange = membership.onChange(() => this.prune());
  }

  /**
   * No async frame while the request waits: a parked GET /events holds this
   * call for up to 100 s, 20,000 of them per gateway (docs/benchmarks.md),
   * so the first attempt is a bare promise chain and only a retry enters
   * the loop.
   */
  request(req: ActorRequest): Promise<ActorResponse> {
    if (this.closed) return Promise.resolve(unavailable());
    const node = this.clientFor(req.shard);
    if (node === null) return this.retry(req);
    return node.request(req).then((res) => (settled(res) ? res : this.retry(req)));
  }

  private async retry(req: ActorRequest): Promise<ActorResponse> {
    let backoff = BACKOFF_MIN_MS;
    const first = req.deadline - Date.now();
    if (first <= 0) return unavailable();
    await delay(Math.min(backoff, first));
    backoff = nextBackoff(backoff);
    for (;;) {
      if (this.closed) return unavailable();
      const node = this.clientFor(req.shard);
      if (node !== null) {
        const res = await node.request(req);
        if (settled(res)) return res;
      }
      const left = req.deadline - Date.now();
      if (left <= 0) return unavailable();
      await delay(Math.min(backoff, left));
      backoff = nextBackoff(backoff);
    }
  }

  /** Id of the node that owns `shard` in the current view, or null when no node is live. */
  ownerOf(shard: number): string | null {
    const owners = this.membership.owners();
    if (owners !== this.placedFor) {
      this.placedFor = owners;
      this.table = new Array(this.shards);
    }
    if (shard < 0 || shard >= this.shards) return ownerOf(shard, owners);
    let owner = this.table[shard];
    if (owner === undefined) owner = this.table[shard] = ownerOf(shard, owners);
    return owner;
  }

  /** Streams open to all nodes (for leak checks and metrics). */
  openStreams(): number {
    let n = 0;
    for (const c of this.pool.values()) n += c.openStreams();
    return n;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.offChange();
    for (const c of this.pool.values()) c.close();
    this.pool.clear();
  }

  private clientFor(shard: number): GrpcNodeClient | null {
    const id = this.ownerOf(shard);
    if (id === null) return null;
    const addr = this.membership.grpcOf(id);
    if (!addr) return null;
    let c = this.pool.get(id);
    if (c === undefined || c.address !== addr) {
      c?.close();
      c = new GrpcNodeClient(addr, this.nodeOptions);
      this.pool.set(id, c);
    }
    return c;
  }

  /** Close the clients of nodes that are no longer live (their pending requests retry). */
  private prune(): void {
    for (const [id, c] of this.pool) {
      const addr = this.membership.grpcOf(id);
      if (addr === undefined || addr !== c.address) {
        c.close();
        this.pool.delete(id);
      }
    }
  }
}
