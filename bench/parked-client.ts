// Child of the events section: opens one parked GET /events per queue in
// the file (each on its own socket) and holds them. Prints "OPEN <n>" once
// every request is written; on SIGUSR2 prints "ANSWERED <n>" (polls the
// server already answered, i.e. no longer parked). Usage:
// parked-client.ts <base url> <queues.json: [{auth, queueId}]>
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";

const [base, file] = process.argv.slice(2) as [string, string];
const queues = JSON.parse(readFileSync(file, "utf8")) as { auth: string; queueId: string }[];
const url = new URL(base);
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
let answered = 0;
let errors = 0;

process.on("SIGUSR2", () => process.stdout.write(`ANSWERED ${answered + errors} ERRORS ${errors}\n`));
process.on("SIGTERM", () => process.exit(0));

/** One parked poll; a refused or reset connection is retried (a real client reconnects). */
function open(q: { auth: string; queueId: string }, tries = 0): void {
  const req = request(
    {
      agent,
      host: url.hostname,
      port: url.port,
      method: "GET",
      path: `/api/v1/events?queue_id=${encodeURIComponent(q.queueId)}&last_event_id=-1`,
      headers: { authorization: q.auth },
    },
    (res) => {
      res.resume();
      res.on("end", () => answered++);
    },
  );
  req.on("error", () => {
    if (tries < 3) setTimeout(() => open(q, tries + 1), 1000);
    else errors++;
  });
  req.end();
}

let written = 0;
for (const q of queues) {
  open(q);
  // Pace the opening so the gateway's accept queue keeps up.
  if (++written % 250 === 0) await new Promise((r) => setTimeout(r, 100));
}
process.stdout.write(`OPEN ${written}\n`);
setInterval(() => {}, 60_000);
