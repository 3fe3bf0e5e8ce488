// Logged-in client devices and their E2EE push registrations (Zulip 12's
// zerver/actions/devices.py, zerver/views/push_notifications.py
// register_push_device and send_e2ee_test_push_notification_api).
//
// A device is "active" for push once the push relay (Zulip's bouncer)
// accepted its token: pushTokenId is set. Registering stores the key and a
// *pending* token id; the gateway then forwards the client's encrypted
// registration to the relay (actors never touch the network) and reports
// the outcome with completePushRegistration, which promotes the pending id
// or records the relay's error code. Events go to the owner's queues only.

import { createHash } from "node:crypto";
import { errors } from "../errors.ts";
import type { SomeHandlersOf } from "../protocol.ts";
import type { Caller, Obj, OutEvent } from "../types.ts";
import type { PushDeviceOut, UserProtocol } from "./protocol.ts";
import type { Device, UserFact, UserState } from "./state.ts";

type Handlers = SomeHandlersOf<
  UserState,
  UserProtocol,
  | "registerClientDevice"
  | "removeClientDevice"
  | "registerPushDevice"
  | "completePushRegistration"
  | "activePushDevices"
  | "devices"
  | "dropPushDevices"
>;

/** libsodium crypto_secretbox_easy: the only cryptosystem Zulip accepts for push_key. */
const SECRETBOX_PREFIX = 0x31;

function fact(f: UserFact): Obj {
  return f as unknown as Obj;
}

function requireSelf(state: UserState, caller: Caller | null): void {
  if (!state.created) throw errors.noSuchUser();
  if (caller && (caller.userId !== state.userId || caller.realmId !== state.realmId)) {
    throw errors.accessDenied();
  }
}

/** Zulip's human_users_only. */
function requireHumanSelf(state: UserState, caller: Caller | null): void {
  requireSelf(state, caller);
  if (state.isBot) throw errors.botsNotAllowed();
}

/** Python's base64.b64decode(s, validate=True): standard alphabet, correct padding. */
function strictBase64(s: string): Buffer | null {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) return null;
  return Buffer.from(s, "base64");
}

/**
 * Zulip's b64decode_token_id_base64 then b64encode_token_id_int: the bytes
 * are a signed big-endian integer, stored as 8 bytes. More than 8 bytes
 * does not fit Zulip's BigIntegerField (a database error there); we refuse
 * it with the same error as bad base64.
 */
function canonicalTokenId(raw: string): string {
  const bytes = strictBase64(raw);
  if (!bytes || bytes.length > 8) throw errors.tokenIdNotBase64();
  const out = Buffer.alloc(8, bytes.length && bytes[0]! & 0x80 ? 0xff : 0x00);
  bytes.copy(out, 8 - bytes.length);
  return out.toString("base64");
}

/** Zulip's check_push_key: base64 of a 0x31 prefix and a 32-byte key. */
function checkPushKey(raw: string): string {
  const bytes = strictBase64(raw);
  if (!bytes || bytes.length !== 33 || bytes[0] !== SECRETBOX_PREFIX) throw errors.invalidPushKey();
  return bytes.toString("base64");
}

function findDevice(state: UserState, id: number | undefined): Device {
  const d = id === undefined ? undefined : state.devices.find((x) => x.id === id);
  if (!d) throw errors.invalidDeviceId();
  return d;
}

function deviceEvent(state: UserState, fields: Obj) {
  return { event: { type: "device", ...fields }, userIds: [state.userId] };
}

function update(
  state: UserState,
  d: Device,
  changes: Partial<Device>,
  event: Obj,
): { facts: Obj[]; events: OutEvent[] } {
  return {
    facts: [fact({ type: "deviceUpdated", id: d.id, changes })],
    events: [deviceEvent(state, { op: "update", device_id: d.id, ...event })],
  };
}

/** The `devices` value of POST /register: Zulip's get_devices. */
export function formatDevices(state: UserState): Obj {
  const out: Obj = {};
  for (const d of state.devices) {
    out[String(d.id)] = {
      push_key_id: d.pushKeyId,
      push_token_id: d.pushTokenId,
      pending_push_token_id: d.pendingPushTokenId,
      push_token_last_updated_timestamp: d.pushTokenLastUpdated,
      push_registration_error_code: d.pushRegistrationErrorCode,
    };
  }
  return out;
}

/**
 * An active device (the relay accepted its token) as encrypting for it
 * needs it, else null. A token id is only ever accepted for a registration
 * that set the key and the token kind.
 */
export function pushDeviceOut(d: Device): PushDeviceOut | null {
  const { pushKey, pushKeyId, pushTokenId, pushTokenKind } = d;
  if (pushTokenId === null || pushKey === null || pushKeyId === null || pushTokenKind === null) return null;
  return {
    device_id: d.id,
    push_key: pushKey,
    push_key_id: pushKeyId,
    push_token_id: pushTokenId,
    push_token_kind: pushTokenKind,
  };
}

// ---- POST /register_client_device, POST /remove_client_device -------------

const registerClientDevice: Handlers["registerClientDevice"] = async (state, _args, ctx, caller) => {
  requireSelf(state, caller);
  const id = await ctx.nextId(`device.${state.realmId}`);
  return {
    facts: [fact({ type: "deviceAdded", id })],
    events: [deviceEvent(state, { op: "add", device_id: id })],
    reply: { device_id: id },
  };
};

const removeClientDevice: Handlers["removeClientDevice"] = (state, args, _ctx, caller) => {
  requireSelf(state, caller);
  const d = findDevice(state, args.deviceId);
  return {
    facts: [fact({ type: "deviceRemoved", id: d.id })],
    events: [deviceEvent(state, { op: "remove", device_id: d.id })],
    reply: {},
  };
};

// ---- POST /mobile_push/register ---------------------------------------------

/**
 * The user's legacy tokens of this kind whose token id (the first 8 bytes
 * of the token's SHA-256, as clients derive it) is `token`: registering the
 * same token for E2EE push removes its legacy registration (level 483), so
 * the device is not notified twice.
 */
function supersededLegacyTokens(state: UserState, kind: string, token: string): Obj[] {
  return state.pushTokens
    .filter(
      (t) =>
        t.kind === kind &&
        createHash("sha256").update(t.token).digest().subarray(0, 8).toString("base64") === token,
    )
    .map((t) => fact({ type: "pushTokenRemoved", kind: t.kind, token: t.token }));
}

/**
 * Zulip's register_push_device, in its order of checks. Replies `relay`:
 * what the gateway must forward to the push relay, or null when nothing
 * needs registering (key rotation, idempotent repeats).
 */
const registerPushDevice: Handlers["registerPushDevice"] = (state, args, ctx, caller) => {
  requireHumanSelf(state, caller);
  if (!args.relayConfigured) throw errors.pushServiceNotConfigured();
  const d = findDevice(state, args.deviceId);
  const { tokenKind, pushKey, pushKeyId, bouncerPublicKey, tokenId } = args;
  const encrypted = args.encryptedPushRegistration;

  const keyFields = pushKey !== undefined && pushKeyId !== undefined;
  const tokenFields =
    bouncerPublicKey !== undefined &&
    encrypted !== undefined &&
    tokenId !== undefined &&
    tokenKind !== undefined;
  if (!keyFields && !tokenFields) throw errors.pushFieldsMissing();

  if (keyFields && !tokenFields) {
    if (d.pushKeyId === null) throw errors.noRegistrationToRotateKey();
    const key = checkPushKey(pushKey);
    if (d.pushKeyId === pushKeyId && d.pushKey === key) return { reply: { relay: null } };
    return {
      ...update(state, d, { pushKey: key, pushKeyId }, { push_key_id: pushKeyId }),
      reply: { relay: null },
    };
  }

  // A registration the relay has not answered yet: a second one would race it.
  if (d.pushRegistrationErrorCode === null && d.pendingPushTokenId !== null) {
    throw errors.registrationInProgress();
  }
  const token = canonicalTokenId(tokenId!);
  const now = Math.floor(ctx.now() / 1000);
  // Level 483: the legacy registration of the same token is superseded.
  const superseded = supersededLegacyTokens(state, tokenKind!, token);
  let decision: { facts: Obj[]; events: OutEvent[] };
  if (!keyFields) {
    if (d.pushKeyId === null) throw errors.noRegistrationToRotateToken();
    if (d.pushRegistrationErrorCode === null && d.pushTokenId === token)
      return { facts: superseded, reply: { relay: null } };
    decision = update(
      state,
      d,
      { pendingPushTokenId: token, pushTokenLastUpdated: now, pushRegistrationErrorCode: null },
      {
        pending_push_token_id: tokenId!,
        push_token_last_updated_timestamp: now,
        push_registration_error_code: null,
      },
    );
  } else {
    const key = checkPushKey(pushKey);
    if (
      d.pushRegistrationErrorCode === null &&
      d.pushKeyId === pushKeyId &&
      d.pushKey === key &&
      d.pushTokenId === token &&
      d.pushTokenKind === tokenKind
    ) {
      return { facts: superseded, reply: { relay: null } };
    }
    decision = update(
      state,
      d,
      {
        pushKey: key,
        pushKeyId,
        pendingPushTokenId: token,
        pushTokenKind: tokenKind!,
        pushTokenLastUpdated: now,
        pushRegistrationErrorCode: null,
      },
      {
        push_key_id: pushKeyId,
        pending_push_token_id: tokenId!,
        push_token_last_updated_timestamp: now,
        push_registration_error_code: null,
      },
    );
  }
  return {
    ...decision,
    facts: [...superseded, ...decision.facts],
    reply: {
      relay: {
        device_id: d.id,
        token_id: tokenId!,
        bouncer_public_key: bouncerPublicKey!,
        encrypted_push_registration: encrypted!,
      },
    },
  };
};

/**
 * The relay's answer to a registration the gateway forwarded: `ok`, or the
 * error code to record. A device removed or re-registered meanwhile is left
 * alone (the answer is about a token id it no longer waits for).
 */
const completePushRegistration: Handlers["completePushRegistration"] = (state, args, _ctx, caller) => {
  requireHumanSelf(state, caller);
  const d = state.devices.find((x) => x.id === args.deviceId);
  const tokenId = args.tokenId;
  const token = canonicalTokenId(tokenId);
  if (!d || d.pendingPushTokenId !== token || d.pushRegistrationErrorCode !== null) return { reply: {} };
  const errorCode = args.errorCode;
  if (errorCode !== undefined) {
    return {
      ...update(
        state,
        d,
        { pushRegistrationErrorCode: errorCode },
        { push_registration_error_code: errorCode },
      ),
      reply: {},
    };
  }
  return {
    ...update(
      state,
      d,
      { pushTokenId: token, pendingPushTokenId: null },
      { push_token_id: tokenId, pending_push_token_id: null },
    ),
    reply: {},
  };
};

// ---- POST /mobile_push/e2ee/test_notification -------------------------------

/** The caller's active push devices (all, or the one asked for), with what encrypting needs. */
const activePushDevices: Handlers["activePushDevices"] = (state, args, _ctx, caller) => {
  requireHumanSelf(state, caller);
  const only = args.deviceId;
  const active: PushDeviceOut[] = [];
  for (const d of state.devices) {
    const out = only === undefined || d.id === only ? pushDeviceOut(d) : null;
    if (out) active.push(out);
  }
  if (!active.length) throw errors.noActivePushDevice();
  return { reply: { devices: active } };
};

// ---- POST /users/me/api_key/regenerate ---------------------------------------

/**
 * Level 492: a new API key logs the user out everywhere, so the devices
 * registered for E2EE push stop being notified: they are removed (a
 * `device`/`remove` event each). Devices without a push registration stay.
 * {key}: the realm's hand-off of the key change (actors/realm/
 * member-handoffs.ts), internal only; journaled, so a hand-off given again
 * drops nothing, not even a device registered with the new key since.
 */
const dropPushDevices: Handlers["dropPushDevices"] = (state, args, _ctx, caller) => {
  if (caller) throw errors.accessDenied();
  if (!state.created) throw errors.noSuchUser();
  if (state.devicesDroppedFor?.includes(args.key)) return { reply: {} };
  const gone = state.devices.filter((d) => d.pushKeyId !== null);
  return {
    facts: [
      ...gone.map((d) => fact({ type: "deviceRemoved", id: d.id })),
      fact({ type: "devicesDropped", key: args.key }),
    ],
    events: gone.map((d) => deviceEvent(state, { op: "remove", device_id: d.id })),
    reply: {},
  };
};

// ---- POST /register ---------------------------------------------------------

const devices: Handlers["devices"] = (state, _args, _ctx, caller) => {
  requireSelf(state, caller);
  return { reply: { devices: formatDevices(state) } };
};

export const deviceHandlers: Handlers = {
  registerClientDevice,
  removeClientDevice,
  registerPushDevice,
  completePushRegistration,
  activePushDevices,
  devices,
  dropPushDevices,
};
