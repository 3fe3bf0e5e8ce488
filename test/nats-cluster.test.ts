// NATS_URL accepts a NATS cluster: a comma-separated list of servers. Two
// real nats-server processes joined by routes; a bus given both URLs talks
// to a bus on the other server, and when the server it is connected to dies
// it reconnects to the survivor and keeps receiving.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { NatsBus, natsServers } from "../cluster/transport/nats-bus.ts";
import { freePort, requireBinaries } from "./support/index.ts";
import { waitForPort } from "./support/services.ts";

const skip = requireBinaries("nats-server");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (cond()) return true;
    await sleep(50);
  }
  return cond();
}

test("natsServers splits comma-separated NATS_URL values", () => {
  assert.deepEqual(natsServers("nats://a:4222, nats://b:4222,,nats://c:4222"), [
    "nats://a:4222",
    "nats://b:4222",
    "nats://c:4222",
  ]);
  assert.deepEqual(natsServers(["nats://a:1,nats://b:2", "nats://c:3"]), [
    "nats://a:1",
    "nats://b:2",
    "nats://c:3",
  ]);
});

describe("bus on a two-server NATS cluster", { skip }, () => {
  const procs = new Map<number, ChildProcess>();
  let ports: number[] = [];

  before(async () => {
    ports = [await freePort(), await freePort()];
    const routes = [await freePort(), await freePort()];
    for (let i = 0; i < 2; i++) {
      const p = spawn(
        "nats-server",
        [
          "-a",
          "127.0.0.1",
          "-p",
          String(ports[i]),
          "--cluster_name",
          "zt",
          "--cluster",
          `nats://127.0.0.1:${routes[i]}`,
          "--routes",
          `nats://127.0.0.1:${routes[1 - i]}`,
        ],
        { stdio: "ignore" },
      );
      p.on("error", () => {});
      procs.set(ports[i]!, p);
    }
    for (const port of ports) await waitForPort(port);
  });

  after(async () => {
    for (const p of procs.values()) {
      if (p.exitCode === null && p.signalCode === null) {
        const gone = new Promise((r) => p.once("exit", r));
        p.kill("SIGKILL");
        await gone;
      }
    }
  });

  test("a bus given both URLs reaches the other server and survives losing its own", async () => {
    const [pa, pb] = ports as [number, number];
    const both = await NatsBus.connect(`nats://127.0.0.1:${pa},nats://127.0.0.1:${pb}`, "test:both");
    const onA = await NatsBus.connect(`nats://127.0.0.1:${pa}`, "test:a");
    const onB = await NatsBus.connect(`nats://127.0.0.1:${pb}`, "test:b");
    try {
      const got: string[] = [];
      both.subscribe("t.x", (d) => got.push(new TextDecoder().decode(d)));
      await both.nc.flush();
      // Routes form asynchronously: publish from both servers until each arrives.
      for (const [bus, tag] of [
        [onA, "from a"],
        [onB, "from b"],
      ] as const) {
        assert.ok(
          await until(() => {
            if (got.includes(tag)) return true;
            bus.publish("t.x", new TextEncoder().encode(tag));
            return false;
          }),
          `${tag} arrived`,
        );
      }

      // Kill the server `both` is connected to; it reconnects to the other.
      const mine = Number(both.nc.getServer().split(":").pop());
      assert.ok(mine === pa || mine === pb, `connected to ${both.nc.getServer()}`);
      const survivor = mine === pa ? onB : onA;
      const victim = procs.get(mine)!;
      const gone = new Promise((r) => victim.once("exit", r));
      victim.kill("SIGKILL");
      await gone;
      assert.ok(
        await until(() => {
          if (got.includes("after failover")) return true;
          survivor.publish("t.x", new TextEncoder().encode("after failover"));
          return false;
        }, 15_000),
        "a message published after the failover arrived",
      );
      assert.equal(Number(both.nc.getServer().split(":").pop()), mine === pa ? pb : pa);
    } finally {
      for (const b of [both, onA, onB]) await b.close().catch(() => {});
    }
  });
});
