// The test support entry: what a black-box test of the server needs, from
// one import (docs/testing.md shows how a test is written with it).
//
//   servers     useEmbedded / startEmbedded (embedded.ts), useChat / startChat
//               (chat.ts: the node's events recorded, users of any role made
//               in process), useCluster / startCluster (cluster.ts; nodeOf: the node owning an
//               actor), and the
//               binaries a cluster needs (services.ts)
//   API calls   srv.api(method, path, params, auth) on any of them; makeApi
//               for another base URL or default caller
//   assertions  assertSuccess / ok (returns the body), assertError / err
//   users       newUser(srv, role), newBot, roleMatrix (one of each role and
//               a bot), ROLE
//   channels    createChannel(srv, subscribers, params), subscribeTo, uniq
//   events      openQueue, drain, eventsUntil, nextEvent; verifyAction
//               (apply-events.ts) for register state
//   waiting     waitFor(cond, { timeoutMs }), sleep
//   environment useEnv({ NAME: value }) for a suite's servers
//   system bots WELCOME_BOT, NOTIFICATION_BOT, withoutGreeting
//
// Narrower helpers keep their own modules: openapi.ts (schema validation),
// uploads.ts (multipart), invites.ts (SMTP and a browser), ops.ts (raw HTTP
// and metrics), logs.ts, fixtures.ts (stored messages for unit tests),
// fuzz.ts, s3.ts, otlp-receiver.ts.

export {
  basicAuth,
  formEncode,
  makeApi,
  startEmbedded,
  TEST_BOOTSTRAP,
  useEmbeddedNode,
  useEmbedded,
  type Api,
  type ApiResult,
  type Creds,
  type EmbeddedHandle,
  type EmbeddedTestOptions,
} from "./embedded.ts";
export { reaches, startChat, useChat, type Chat, type User } from "./chat.ts";
export { nodeOf, OWNER, startCluster, useCluster, type ClusterOptions, type TestCluster } from "./cluster.ts";
export { freePort, hasBinary, requireBinaries, startNats, startRedis, type Service } from "./services.ts";
export {
  assertError,
  assertSuccess,
  drain,
  err,
  eventsUntil,
  newBot,
  newUser,
  nextEvent,
  ok,
  openQueue,
  roleMatrix,
  ROLE,
  type ApiHolder,
  type Ev,
  type Member,
  type Queue,
  type RoleName,
} from "./zulip-asserts.ts";
export { createChannel, subscribeTo, uniq } from "./channels.ts";
export { sleep, waitFor, type WaitOptions } from "./wait.ts";
export { useEnv } from "./env.ts";
export { isGreeting, NOTIFICATION_BOT, WELCOME_BOT, withoutGreeting } from "./system-bots.ts";
export { applyEvent, STATELESS, verifyAction, type VerifyOptions } from "./apply-events.ts";
