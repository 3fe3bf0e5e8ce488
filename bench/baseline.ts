// The baseline every figure is a ratio to: a bare Fastify server with a
// form-POST handler and a small-JSON GET handler, measured in the same run
// on the same machine.
import Fastify from "fastify";
import formbody from "@fastify/formbody";

const app = Fastify({ logger: false });
await app.register(formbody);
const echo = async (req: { body: unknown }) => {
  const body = req.body as Record<string, string>;
  return { result: "success", msg: "", echo: Object.keys(body ?? {}).length };
};
app.patch("/api/v1/settings", echo);
app.post("/api/v1/settings", echo);
app.get("/api/v1/ping", async () => ({ result: "success", msg: "", pong: true }));
// The parked-poll baseline: a GET that is never answered, as a long-poll
// waits (the handler neither returns a promise nor sends).
app.get("/api/v1/events", () => {});
// The gateway's backlog, so an opening burst of polls is not dropped.
await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1", backlog: 4096 });
const addr = app.server.address();
console.log(`LISTENING ${typeof addr === "object" && addr ? addr.port : 0}`);
