// Redis implementation of the storage contract (cluster mode). Key layout and
// reasons: docs/storage.md. Every key of a shard carries the hash tag
// `{s<shard>}`, so each fenced write (one Lua script) touches one slot and the
// store runs unchanged on Redis Cluster: `createRedisStore(url)` talks to one
// Redis, `createRedisClusterStore(seeds)` to a Redis Cluster (node-redis
// `createCluster`, which routes every command by its first key's slot and
// follows MOVED/ASK). Every command and script here names keys of one slot.
//
// Performance: no per-command timeouts, no MULTI; commands issued in the same
// tick are written to the socket together (node-redis auto-pipelining), and
// scripts go by EVALSHA with an EVAL fallback on NOSCRIPT (the script cache is
// not persisted across a Redis restart).
import { createHash } from "node:crypto";
import { createClient, createCluster } from "redis";
import { Repository, Schema } from "redis-om";
import { FencedError } from "../runtime-errors.ts";
import type { RedisTls } from "../config.ts";
import type { JournalEntry, RecordWrite, Snapshot, Store } from "./contract.ts";
import { checkIndexName, checkKeys, checkRange, checkWrites } from "./records.ts";

export interface RedisStoreOptions {
  /** Prepended to every key (e.g. "test1:"); must not contain "{" or "}". */
  prefix?: string;
  /**
   * CA to verify the server's certificate and/or a client certificate
   * (REDIS_TLS_*); only with rediss:// URLs. Credentials come from the URL.
   */
  tls?: RedisTls | null;
}

type Client = ReturnType<typeof createClient>;
type Cluster = ReturnType<typeof createCluster>;

/**
 * What the store needs of a connection, for one Redis and for a cluster
 * alike. `send` names the command's first key so a cluster routes it to the
 * key's slot (every command and script of this store touches one slot).
 */
interface Conn {
  send<T>(
    firstKey: string,
    readonly: boolean,
    args: Array<string | Buffer>,
    returnBuffers?: boolean,
  ): Promise<T>;
  get(key: string): Promise<string | null>;
  incr(key: string): Promise<number>;
  /** Every key matching a SCAN pattern (on a cluster: over every master). */
  scan(pattern: string): Promise<string[]>;
  /** Handed to redis-om, which calls hGetAll (fetch) on it. */
  om: Client | Cluster;
  close(): Promise<void>;
}

const reconnectStrategy = (attempts: number) => Math.min(attempts * 50, 500);

/**
 * TLS material for a connection to `url`: none for redis:// (and certificate
 * files given for it are a configuration error, not silently unused).
 */
function tlsFor(urls: string[], tls: RedisTls | null | undefined): RedisTls & { tls?: true } {
  const secure = urls.map((u) => u.startsWith("rediss://"));
  if (secure.some((s) => s !== secure[0])) throw new Error("redis: mix of redis:// and rediss:// URLs");
  if (!secure[0]) {
    if (tls) throw new Error("REDIS_TLS_* is set but the Redis URL is not rediss://");
    return {};
  }
  return { tls: true, ...tls };
}

async function singleConn(url: string, tls: RedisTls | null | undefined): Promise<Conn> {
  const client: Client = createClient({
    url,
    disableOfflineQueue: false,
    socket: { reconnectStrategy, ...tlsFor([url], tls) },
  });
  // Connection errors are retried by the reconnect strategy; commands wait in
  // the offline queue. Without a listener an 'error' event would crash the process.
  client.on("error", () => {});
  await client.connect();
  return {
    send: (_key, _ro, args, returnBuffers) =>
      client.sendCommand(args, returnBuffers ? { returnBuffers: true } : undefined),
    get: (key) => client.get(key),
    incr: (key) => client.incr(key),
    async scan(pattern) {
      const keys: string[] = [];
      for await (const k of client.scanIterator({ MATCH: pattern, COUNT: 1000 })) keys.push(k);
      return keys;
    },
    om: client,
    async close() {
      if (client.isOpen) await client.quit();
    },
  };
}

/**
 * The ACL user and password of the seed URLs (all alike). createCluster reads
 * them from a root node's URL, but connects to the nodes it discovers with
 * `defaults` only, so they go there too.
 */
function clusterCredentials(seeds: string[]): { username?: string; password?: string } {
  const creds = seeds.map((u) => {
    const p = new URL(u);
    return { username: decodeURIComponent(p.username), password: decodeURIComponent(p.password) };
  });
  const first = creds[0]!;
  if (creds.some((c) => c.username !== first.username || c.password !== first.password)) {
    throw new Error("REDIS_CLUSTER_URLS: every seed URL must carry the same user and password");
  }
  return {
    ...(first.username ? { username: first.username } : {}),
    ...(first.password ? { password: first.password } : {}),
  };
}

async function clusterConn(seeds: string[], tls: RedisTls | null | undefined): Promise<Conn> {
  if (seeds.length === 0) throw new Error("redis cluster store: no seed URLs");
  const cluster: Cluster = createCluster({
    rootNodes: seeds.map((url) => ({ url })),
    defaults: {
      ...clusterCredentials(seeds),
      disableOfflineQueue: false,
      socket: { reconnectStrategy, ...tlsFor(seeds, tls) },
    },
  });
  cluster.on("error", () => {});
  await cluster.connect();
  return {
    send: (key, ro, args, returnBuffers) =>
      cluster.sendCommand(key, ro, args, returnBuffers ? { returnBuffers: true } : undefined),
    get: (key) => cluster.get(key),
    incr: (key) => cluster.incr(key),
    async scan(pattern) {
      const keys: string[] = [];
      for (const m of cluster.masters) {
        const c = await cluster.nodeClient(m);
        for await (const k of c.scanIterator({ MATCH: pattern, COUNT: 1000 })) keys.push(k);
      }
      return keys;
    },
    om: cluster,
    async close() {
      if (cluster.isOpen) await cluster.quit();
    },
  };
}

/** Entity name of snapshots; redis-om keys them `<prefix>Snapshot:<id>`. */
const SNAPSHOT_ENTITY = "Snapshot";

// acquireLease: KEYS lease, epoch; ARGV node, ttlMs -> epoch or nil.
const ACQUIRE = `
local cur = redis.call('GET', KEYS[1])
if cur and string.match(cur, '^(.*):%d+$') ~= ARGV[1] then return false end
local e = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. e, 'PX', ARGV[2])
return e`;

// renewLease: KEYS lease; ARGV node, epoch, ttlMs -> 1 | 0.
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] .. ':' .. ARGV[2] then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return 1
end
return 0`;

// releaseLease: KEYS lease; ARGV node, epoch -> 1 | 0.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] .. ':' .. ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`;

// The record writes an append carries, shared by APPEND and APPEND_MANY.
// writes(k, a, apply): ARGV[a] = number of writes, then per write its op and
// arguments, each naming one key, KEYS[k], KEYS[k+1], ... in order:
//   'p' value        SET the record
//   'd'              DEL the record
//   'a' count id...  ZADD the ids (score = member = the id's decimal text)
//   'r' count id...  ZREM the ids
// Applies them when \`apply\` (else only steps over them: an item skipped for
// its seq writes nothing) and returns the next k and a. ZADD/ZREM go in
// chunks: Lua's unpack is bounded by its C stack (8000 values).
const WRITES = `
local function writes(k, a, apply)
  local nw = tonumber(ARGV[a])
  a = a + 1
  for _ = 1, nw do
    local op = ARGV[a]
    local key = KEYS[k]
    k = k + 1
    if op == 'p' then
      if apply then redis.call('SET', key, ARGV[a + 1]) end
      a = a + 2
    elseif op == 'd' then
      if apply then redis.call('DEL', key) end
      a = a + 1
    else
      local n = tonumber(ARGV[a + 1])
      a = a + 2
      if apply then
        local i = 0
        while i < n do
          local m = math.min(n - i, 1000)
          local args = {}
          if op == 'a' then
            for j = 1, m do
              local id = ARGV[a + i + j - 1]
              args[2 * j - 1] = id
              args[2 * j] = id
            end
            redis.call('ZADD', key, unpack(args))
          else
            for j = 1, m do args[j] = ARGV[a + i + j - 1] end
            redis.call('ZREM', key, unpack(args))
          end
          i = i + m
        end
      end
      a = a + n
    end
  end
  return k, a
end
`;

// append: KEYS lease, jlast, journal, write keys...; ARGV epoch, actor,
// firstSeq, count, entry..., writes (WRITES) -> n appended, -1 fenced (no
// lease or another epoch), -2 not contiguous (nothing written).
const APPEND = `${WRITES}
local cur = redis.call('GET', KEYS[1])
if not cur or string.match(cur, ':(%d+)$') ~= ARGV[1] then return -1 end
local n = tonumber(ARGV[4])
if n > 0 then
  local first = tonumber(ARGV[3])
  local last = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0')
  if first ~= last + 1 then return -2 end
  for i = 1, n do
    redis.call('XADD', KEYS[3], '0-' .. string.format('%d', first + i - 1), 'd', ARGV[4 + i])
  end
  redis.call('HSET', KEYS[2], ARGV[2], string.format('%d', first + n - 1))
end
writes(4, 5 + n, true)
return n`;

// appendMany: KEYS lease, jlast, then per item its journal and its write
// keys; ARGV epoch, then per item: actor, firstSeq, count, entry..., writes
// (WRITES) -> -1 fenced, else one 1 (written) or 0 (not contiguous, none of
// its entries or writes applied) per item.
const APPEND_MANY = `${WRITES}
local cur = redis.call('GET', KEYS[1])
if not cur or string.match(cur, ':(%d+)$') ~= ARGV[1] then return -1 end
local out = {}
local a = 2
local k = 3
while a <= #ARGV do
  local journal = KEYS[k]
  local actor = ARGV[a]
  local first = tonumber(ARGV[a + 1])
  local n = tonumber(ARGV[a + 2])
  local ok = 1
  if n > 0 then
    local last = tonumber(redis.call('HGET', KEYS[2], actor) or '0')
    if first ~= last + 1 then
      ok = 0
    else
      for i = 1, n do
        redis.call('XADD', journal, '0-' .. string.format('%d', first + i - 1), 'd', ARGV[a + 2 + i])
      end
      redis.call('HSET', KEYS[2], actor, string.format('%d', first + n - 1))
    end
  end
  out[#out + 1] = ok
  k, a = writes(k + 1, a + 3 + n, ok == 1)
end
return out`;

// saveSnapshot: KEYS lease, snapshot hash, journal, jlast; ARGV epoch, actor,
// seq, data -> 1 saved, 0 skipped (a newer snapshot exists), -1 fenced.
// Writes the hash exactly as redis-om's HASH save would (UNLINK + HSET of
// the schema's fields, numbers as their decimal text), then trims the journal.
const SNAPSHOT = `
local cur = redis.call('GET', KEYS[1])
if not cur or string.match(cur, ':(%d+)$') ~= ARGV[1] then return -1 end
local seq = tonumber(ARGV[3])
local old = redis.call('HGET', KEYS[2], 'seq')
if old and tonumber(old) > seq then return 0 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'actor', ARGV[2], 'seq', ARGV[3], 'epoch', ARGV[1], 'data', ARGV[4])
redis.call('XTRIM', KEYS[3], 'MINID', '0-' .. string.format('%d', seq + 1))
local last = tonumber(redis.call('HGET', KEYS[4], ARGV[2]) or '0')
if seq > last then redis.call('HSET', KEYS[4], ARGV[2], ARGV[3]) end
return 1`;

class Script {
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash("sha1").update(source).digest("hex");
  }
}

const scripts = {
  acquire: new Script(ACQUIRE),
  renew: new Script(RENEW),
  release: new Script(RELEASE),
  append: new Script(APPEND),
  appendMany: new Script(APPEND_MANY),
  snapshot: new Script(SNAPSHOT),
};

/** The redis-om schema of a snapshot hash. Only `fetch` by id is used (no RediSearch here). */
export function snapshotSchema(prefix = ""): Schema {
  return new Schema(
    `${prefix}${SNAPSHOT_ENTITY}`,
    {
      actor: { type: "string" },
      seq: { type: "number" },
      epoch: { type: "number" },
      data: { type: "string" },
    },
    { dataStructure: "HASH" },
  );
}

/** redis-om entity id of an actor's snapshot; the key becomes `<prefix>Snapshot:{s<shard>}:<actor>`. */
export function snapshotEntityId(shard: number, actor: string): string {
  return `{s${shard}}:${actor}`;
}

/** A store on one Redis (`redis://host:port`). */
export async function createRedisStore(url: string, opts: RedisStoreOptions = {}): Promise<Store> {
  checkPrefix(opts.prefix ?? "");
  return storeOn(await singleConn(url, opts.tls), opts);
}

/**
 * A store on a Redis Cluster, found through any of its nodes
 * (`redis[s]://[user:password@]host:port` each).
 */
export async function createRedisClusterStore(seeds: string[], opts: RedisStoreOptions = {}): Promise<Store> {
  checkPrefix(opts.prefix ?? "");
  return storeOn(await clusterConn(seeds, opts.tls), opts);
}

function checkPrefix(prefix: string): void {
  if (/[{}]/.test(prefix)) throw new Error(`redis store prefix must not contain braces: ${prefix}`);
}

function storeOn(client: Conn, opts: RedisStoreOptions): Store {
  const prefix = opts.prefix ?? "";
  // redis-om only reads here (fetch = HGETALL of one key); both connection kinds have it.
  const repo = new Repository(snapshotSchema(prefix), client.om as Client);

  const tag = (shard: number) => `${prefix}{s${shard}}`;
  const leaseKey = (shard: number) => `${tag(shard)}:lease`;
  const epochKey = (shard: number) => `${tag(shard)}:epoch`;
  const jlastKey = (shard: number) => `${tag(shard)}:jlast`;
  const journalKey = (shard: number, actor: string) => `${tag(shard)}:j:${actor}`;
  const snapKey = (shard: number, actor: string) =>
    `${prefix}${SNAPSHOT_ENTITY}:${snapshotEntityId(shard, actor)}`;
  const counterKey = (scope: string) => `${prefix}ctr:{${scope}}`;
  // The shard's tag comes first, so braces in the caller's key or index name
  // cannot change the slot: the record lives with the journal that wrote it.
  const recordKey = (shard: number, key: string) => `${tag(shard)}:r:${key}`;
  const indexKey = (shard: number, index: string) => `${tag(shard)}:x:${index}`;
  /** Record ("r") or index ("x") keys whose name starts with `namePrefix`, on shards below `shards` (a SCAN). */
  const scanShardKeys = async (
    kind: "r" | "x",
    namePrefix: string,
    shards: number,
  ): Promise<Array<{ shard: number; rest: string; key: string }>> => {
    const head = `${prefix}{s`;
    const keys = await client.scan(`${globEscape(head)}*}:${kind}:${globEscape(namePrefix)}*`);
    const out: Array<{ shard: number; rest: string; key: string }> = [];
    for (const key of keys) {
      const close = key.indexOf("}", head.length);
      const shard = Number(key.slice(head.length, close));
      const rest = key.slice(close + 4);
      if (Number.isInteger(shard) && shard < shards && key.slice(close + 1, close + 4) === `:${kind}:`)
        out.push({ shard, rest, key });
    }
    return out;
  };

  /** Append one item's writes to a script's keys and args (the WRITES layout). */
  function pushWrites(
    shard: number,
    writes: readonly RecordWrite[],
    keys: string[],
    args: Array<string | Buffer>,
  ) {
    args.push(String(writes.length));
    for (const w of writes) {
      switch (w.op) {
        case "put":
          keys.push(recordKey(shard, w.key));
          args.push("p", toBuffer(w.value));
          break;
        case "delete":
          keys.push(recordKey(shard, w.key));
          args.push("d");
          break;
        case "index":
        case "unindex": {
          const ids = w.op === "index" ? w.add : w.remove;
          keys.push(indexKey(shard, w.index));
          args.push(w.op === "index" ? "a" : "r", String(ids.length));
          for (const id of ids) args.push(String(id));
          break;
        }
      }
    }
  }

  async function run<T>(script: Script, keys: string[], args: Array<string | Buffer>): Promise<T> {
    const tail = [String(keys.length), ...keys, ...args];
    // On a cluster the script runs on the node of keys[0]'s slot; all its keys share that slot.
    try {
      return await client.send<T>(keys[0]!, false, ["EVALSHA", script.sha, ...tail]);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return client.send<T>(keys[0]!, false, ["EVAL", script.source, ...tail]);
    }
  }

  const toBuffer = (u: Uint8Array) =>
    Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);

  function parseLease(value: string | null): { node: string; epoch: number } | null {
    if (value === null) return null;
    const i = value.lastIndexOf(":");
    return { node: value.slice(0, i), epoch: Number(value.slice(i + 1)) };
  }

  return {
    async acquireLease(shard, node, ttlMs) {
      const e = await run<number | null>(
        scripts.acquire,
        [leaseKey(shard), epochKey(shard)],
        [node, String(ttlMs)],
      );
      return e === null ? null : Number(e);
    },

    async renewLease(shard, node, epoch, ttlMs) {
      return (
        (await run<number>(scripts.renew, [leaseKey(shard)], [node, String(epoch), String(ttlMs)])) === 1
      );
    },

    async releaseLease(shard, node, epoch) {
      await run<number>(scripts.release, [leaseKey(shard)], [node, String(epoch)]);
    },

    async leaseHolder(shard) {
      return parseLease(await client.get(leaseKey(shard)));
    },

    async append(shard, epoch, actor, firstSeq, entries, writes = []) {
      checkWrites(writes);
      const keys = [leaseKey(shard), jlastKey(shard), journalKey(shard, actor)];
      const args: Array<string | Buffer> = [
        String(epoch),
        actor,
        String(firstSeq),
        String(entries.length),
        ...entries.map(toBuffer),
      ];
      pushWrites(shard, writes, keys, args);
      const r = await run<number>(scripts.append, keys, args);
      if (r < 0) throw new FencedError(shard, epoch);
    },

    async appendMany(shard, epoch, items) {
      for (const it of items) if (it.writes) checkWrites(it.writes);
      const keys = [leaseKey(shard), jlastKey(shard)];
      const args: Array<string | Buffer> = [String(epoch)];
      for (const { actor, firstSeq, entries, writes = [] } of items) {
        keys.push(journalKey(shard, actor));
        args.push(actor, String(firstSeq), String(entries.length));
        for (const e of entries) args.push(toBuffer(e));
        pushWrites(shard, writes, keys, args);
      }
      const r = await run<number | number[]>(scripts.appendMany, keys, args);
      if (!Array.isArray(r)) throw new FencedError(shard, epoch);
      return r.map((x) => x === 1);
    },

    async readJournal(shard, actor, afterSeq): Promise<JournalEntry[]> {
      const key = journalKey(shard, actor);
      const reply = await client.send<Array<[Buffer, Buffer[]]>>(
        key,
        true,
        ["XRANGE", key, `0-${afterSeq + 1}`, "+"],
        true,
      );
      return reply.map(([id, fields]) => {
        const s = id.toString("latin1");
        const value = fields[1]!;
        return {
          seq: Number(s.slice(s.indexOf("-") + 1)),
          data: new Uint8Array(value.buffer, value.byteOffset, value.byteLength),
        };
      });
    },

    async saveSnapshot(shard, epoch, actor, snapshot) {
      const r = await run<number>(
        scripts.snapshot,
        [leaseKey(shard), snapKey(shard, actor), journalKey(shard, actor), jlastKey(shard)],
        [String(epoch), actor, String(snapshot.seq), snapshot.data],
      );
      if (r < 0) throw new FencedError(shard, epoch);
    },

    async loadSnapshot(shard, actor): Promise<Snapshot | null> {
      const e = await repo.fetch(snapshotEntityId(shard, actor));
      if (typeof e.seq !== "number" || typeof e.data !== "string") return null;
      return { seq: e.seq, data: e.data };
    },

    async getRecords(shard, keys) {
      checkKeys(keys);
      if (keys.length === 0) return [];
      // One MGET: every key has the shard's tag, so one slot (and one node of a cluster).
      const rkeys = keys.map((k) => recordKey(shard, k));
      const reply = await client.send<Array<Buffer | null>>(rkeys[0]!, true, ["MGET", ...rkeys], true);
      return reply.map((v) => (v === null ? null : new Uint8Array(v.buffer, v.byteOffset, v.byteLength)));
    },

    async rangeIndex(shard, index, range) {
      checkRange(index, range);
      const { before, after, limit, reverse = false } = range;
      if (limit === 0) return [];
      const key = indexKey(shard, index);
      const min = after === undefined ? "-inf" : `(${after}`;
      const max = before === undefined ? "+inf" : `(${before}`;
      // Score = id: ZRANGE BYSCORE with LIMIT 0 n is O(log n + limit).
      const reply = await client.send<string[]>(
        key,
        true,
        reverse
          ? ["ZRANGE", key, max, min, "BYSCORE", "REV", "LIMIT", "0", String(limit)]
          : ["ZRANGE", key, min, max, "BYSCORE", "LIMIT", "0", String(limit)],
      );
      const ids = reply.map(Number);
      return reverse ? ids.reverse() : ids;
    },

    async indexSize(shard, index) {
      checkIndexName(index);
      const key = indexKey(shard, index);
      return Number(await client.send<number>(key, true, ["ZCARD", key]));
    },

    async nextId(scope) {
      return client.incr(counterKey(scope));
    },

    async lastSeq(shard, actor) {
      const key = jlastKey(shard);
      // Not a read-only command: a replica could answer an older seq.
      return Number((await client.send<string | null>(key, false, ["HGET", key, actor])) ?? 0);
    },

    async listActors(shards) {
      const lists = await Promise.all(
        Array.from({ length: shards }, (_, shard) => {
          const key = jlastKey(shard);
          return client.send<string[]>(key, true, ["HKEYS", key]).then((actors) => ({ shard, actors }));
        }),
      );
      return lists.flatMap(({ shard, actors }) => actors.map((actor) => ({ shard, actor })));
    },

    async listCounters() {
      const head = `${prefix}ctr:{`;
      const keys = await client.scan(`${globEscape(head)}*}`);
      const values = await Promise.all(keys.map((k) => client.get(k)));
      return keys.map((k, i) => ({ scope: k.slice(head.length, -1), value: Number(values[i] ?? 0) }));
    },

    async listRecords(shards, recordPrefix) {
      const out: Array<{ shard: number; key: string; value: Uint8Array }> = [];
      for (const { shard, rest, key } of await scanShardKeys("r", recordPrefix, shards)) {
        const v = await client.send<Buffer | null>(key, true, ["GET", key], true);
        if (v !== null)
          out.push({ shard, key: rest, value: new Uint8Array(v.buffer, v.byteOffset, v.byteLength) });
      }
      return out;
    },

    async listIndexes(shards, indexPrefix) {
      const out: Array<{ shard: number; index: string; ids: number[] }> = [];
      for (const { shard, rest, key } of await scanShardKeys("x", indexPrefix, shards)) {
        const ids = (await client.send<string[]>(key, true, ["ZRANGE", key, "0", "-1"])).map(Number);
        out.push({ shard, index: rest, ids });
      }
      return out;
    },

    async raiseCounter(scope, value) {
      const key = counterKey(scope);
      await client.send(key, false, ["EVAL", RAISE_COUNTER, "1", key, String(value)]);
    },

    async close() {
      await client.close();
    },
  };
}

/** Sets a counter to ARGV[1] when it is below it. */
const RAISE_COUNTER = `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
return 0`;

/** A literal for a SCAN MATCH pattern. */
function globEscape(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
