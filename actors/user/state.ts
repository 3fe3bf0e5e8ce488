// The user actor's state and the facts that change it.
//
// SNAPSHOT NOTE: a field added to UserState needs a default in
// `userFromSnapshot`, because snapshots written before it lack it.

import type { ActorRef, Obj } from "../types.ts";

/** A saved navigation view (actors/user/navigation-views.ts). */
export interface NavigationView {
  fragment: string;
  isPinned: boolean;
  /** null for a built-in view (its name is the client's). */
  name: string | null;
}

export interface UserStatus {
  statusText: string;
  emojiName: string;
  emojiCode: string;
  reactionType: string;
}

export interface UserState {
  userId: number;
  realmId: number;
  created: boolean;
  /** The delivery email, as given at creation (Zulip keeps its case). */
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
  botType: number | null;
  botOwnerId: number | null;
  isActive: boolean;
  /** ms since the epoch. */
  dateJoined: number;
  timezone: string;
  avatarSource: string;
  avatarVersion: number;
  /** "scrypt$N$r$p$salt$hash", or null for accounts that cannot log in with a password (bots). */
  passwordHash: string | null;
  apiKey: string;
  /** Settings that differ from the defaults in settings.ts. */
  settings: Obj;
  /** Settings the user changed themselves (target_users skip_if_already_edited). */
  selfEdited: string[];
  status: UserStatus;
  /** Saved snippets (Zulip's SavedSnippet rows), oldest first. */
  savedSnippets: SavedSnippet[];
  /** Legacy (non-E2EE) push tokens, Zulip's PushDeviceToken rows. */
  pushTokens: PushToken[];
  /** Logged-in client devices (Zulip's Device rows), oldest first; see devices.ts. */
  devices: Device[];
  /**
   * The keys of the latest API key changes whose push devices were dropped
   * (devices.ts dropPushDevices). SNAPSHOT NOTE: absent in older snapshots.
   */
  devicesDroppedFor?: string[];
  /** Synchronized message drafts (Zulip's Draft rows), in creation order; see drafts.ts. */
  drafts: Draft[];
  /** Alert words in the order added (Zulip's AlertWord rows); see alert-words.ts. */
  alertWords: string[];
  /** Users this user muted, in the order muted; see muted-users.ts. */
  mutedUsers: MutedUser[];
  /** Scheduled messages (Zulip's ScheduledMessage rows), in creation order; see scheduled-messages.ts. */
  scheduled: ScheduledMessage[];
  /** Navigation views (Zulip's NavigationView rows), in creation order; see navigation-views.ts. */
  navigationViews: NavigationView[];
}

/** A message to send later, as the user's actor keeps it. */
export interface ScheduledMessage {
  id: number;
  type: "stream" | "private";
  /** The channel id; or the recipients as Zulip shows them (the other user, oneself, or the others of a group). */
  to: number[];
  /** "" for direct messages. */
  topic: string;
  content: string;
  rendered: string;
  /** UNIX seconds. */
  deliverAt: number;
  /** The request's read_by_sender, or null for the default. */
  readBySender: boolean | null;
  client: string;
  failed: boolean;
  failureMessage: string | null;
  /** Sent (kept a while so an edit answers "already sent"). */
  delivered: boolean;
  /** Delivery attempts begun; the attempt's number is part of its send key. */
  attempts: number;
  /** An attempt is handed off and its outcome not yet journaled. */
  sending: boolean;
  /**
   * A message reminder (Zulip's ScheduledMessage.REMIND, actors/user/reminders.ts):
   * the message it is about. Absent for a scheduled message (and in records
   * written before reminders existed).
   */
  reminderTargetMessageId?: number;
}

/** A draft as the API shows it; the recipient is resolved when saved. */
export interface Draft {
  id: number;
  /** "stream", "private", or "" (unaddressed). */
  type: string;
  /** The channel id, or the other participants' user ids (sorted); [] when unaddressed. */
  to: number[];
  topic: string;
  content: string;
  /** Seconds since the epoch of the last edit, with up to 6 decimals (the API shows it truncated). */
  timestamp: number;
}

export interface MutedUser {
  id: number;
  /** Seconds since the epoch. */
  timestamp: number;
}

/** A logged-in client device and its E2EE push registration. */
export interface Device {
  id: number;
  /** Base64 of the client's push key (a 0x31 prefix byte, then 32 key bytes), or null. */
  pushKey: string | null;
  /** The client's unsigned 32-bit id for pushKey. */
  pushKeyId: number | null;
  /** Canonical base64 of the 8-byte token id the relay accepted: the device is active. */
  pushTokenId: string | null;
  /** Canonical base64 of a token id whose relay registration has not completed. */
  pendingPushTokenId: string | null;
  /** "fcm" or "apns". */
  pushTokenKind: string | null;
  /** Seconds since the epoch of the last change of pendingPushTokenId. */
  pushTokenLastUpdated: number | null;
  /** The relay's refusal of the last registration (e.g. "INVALID_BOUNCER_PUBLIC_KEY"). */
  pushRegistrationErrorCode: string | null;
}

export interface PushToken {
  /** "apns" or "fcm". */
  kind: string;
  token: string;
  /** The iOS app id for APNs tokens, else null. */
  appId: string | null;
  /** ms since the epoch. */
  lastUpdated: number;
}

export interface SavedSnippet {
  id: number;
  title: string;
  content: string;
  /** Seconds since the epoch. */
  dateCreated: number;
}

/** Facts of the user journal. */
export type UserFact =
  | {
      type: "created";
      email: string;
      fullName: string;
      role: number;
      isBot: boolean;
      botType: number | null;
      botOwnerId: number | null;
      apiKey: string;
      passwordHash: string | null;
      dateJoined: number;
      /** "J" when the realm's default_avatar_source gave a Jdenticon (absent in older facts: "G"). */
      avatarSource?: string;
    }
  | { type: "settings"; values: Obj; bySelf: boolean }
  | { type: "timezone"; timezone: string }
  | { type: "fullName"; fullName: string }
  /** The realm changed the delivery email (PATCH /users new_email). */
  | { type: "email"; email: string }
  | { type: "password"; passwordHash: string }
  | { type: "status"; statusText?: string; emojiName?: string; emojiCode?: string; reactionType?: string }
  /** Added or edited: the whole snippet after the change. */
  | { type: "snippetSaved"; snippet: SavedSnippet }
  | { type: "snippetRemoved"; id: number }
  | { type: "pushTokenAdded"; token: PushToken }
  | { type: "pushTokenRemoved"; kind: string; token: string }
  | { type: "deviceAdded"; id: number }
  | { type: "deviceRemoved"; id: number }
  /** The push devices of the API key change `key` were dropped (the deviceRemoved facts before it). */
  | { type: "devicesDropped"; key: string }
  /** The whole list after an add or remove. */
  | { type: "alertWords"; words: string[] }
  | { type: "userMuted"; muted: MutedUser }
  | { type: "userUnmuted"; id: number }
  /** Only the fields that changed. */
  | { type: "deviceUpdated"; id: number; changes: Partial<Device> };

/** How many API key changes `devicesDroppedFor` remembers: a hand-off is given again long before more follow. */
const DROPPED_KEYS_KEPT = 10;

export function initialUser(ref: ActorRef): UserState {
  return {
    userId: Number(ref.key),
    realmId: ref.realm,
    created: false,
    email: "",
    fullName: "",
    role: 400,
    isBot: false,
    botType: null,
    botOwnerId: null,
    isActive: true,
    dateJoined: 0,
    timezone: "",
    avatarSource: "G",
    avatarVersion: 1,
    passwordHash: null,
    apiKey: "",
    settings: {},
    selfEdited: [],
    status: { statusText: "", emojiName: "", emojiCode: "", reactionType: "unicode_emoji" },
    savedSnippets: [],
    pushTokens: [],
    devices: [],
    drafts: [],
    alertWords: [],
    mutedUsers: [],
    scheduled: [],
    navigationViews: [],
  };
}

export function applyUserFact(state: UserState, raw: Obj): UserState {
  const fact = raw as unknown as UserFact;
  switch (fact.type) {
    case "created":
      Object.assign(state, {
        created: true,
        email: fact.email,
        fullName: fact.fullName,
        role: fact.role,
        isBot: fact.isBot,
        botType: fact.botType,
        botOwnerId: fact.botOwnerId,
        apiKey: fact.apiKey,
        passwordHash: fact.passwordHash,
        dateJoined: fact.dateJoined,
        avatarSource: fact.avatarSource ?? "G",
      });
      break;
    case "settings":
      for (const [k, v] of Object.entries(fact.values)) {
        state.settings[k] = v;
        if (fact.bySelf && !state.selfEdited.includes(k)) state.selfEdited.push(k);
      }
      break;
    case "timezone":
      state.timezone = fact.timezone;
      break;
    case "fullName":
      state.fullName = fact.fullName;
      break;
    case "email":
      state.email = fact.email;
      break;
    case "password":
      state.passwordHash = fact.passwordHash;
      break;
    case "status":
      if (fact.statusText !== undefined) state.status.statusText = fact.statusText;
      if (fact.emojiName !== undefined) state.status.emojiName = fact.emojiName;
      if (fact.emojiCode !== undefined) state.status.emojiCode = fact.emojiCode;
      if (fact.reactionType !== undefined) state.status.reactionType = fact.reactionType;
      break;
    case "snippetSaved": {
      const i = state.savedSnippets.findIndex((x) => x.id === fact.snippet.id);
      if (i >= 0) state.savedSnippets[i] = { ...fact.snippet };
      else state.savedSnippets.push({ ...fact.snippet });
      break;
    }
    case "pushTokenAdded": {
      const t = fact.token;
      state.pushTokens = state.pushTokens.filter((x) => !(x.kind === t.kind && x.token === t.token));
      state.pushTokens.push({ ...t });
      break;
    }
    case "pushTokenRemoved":
      state.pushTokens = state.pushTokens.filter((x) => !(x.kind === fact.kind && x.token === fact.token));
      break;
    case "deviceAdded":
      state.devices.push({
        id: fact.id,
        pushKey: null,
        pushKeyId: null,
        pushTokenId: null,
        pendingPushTokenId: null,
        pushTokenKind: null,
        pushTokenLastUpdated: null,
        pushRegistrationErrorCode: null,
      });
      break;
    case "deviceRemoved":
      state.devices = state.devices.filter((d) => d.id !== fact.id);
      break;
    case "devicesDropped": {
      const keys = (state.devicesDroppedFor ??= []);
      keys.push(fact.key);
      if (keys.length > DROPPED_KEYS_KEPT) keys.shift();
      break;
    }
    case "deviceUpdated": {
      const d = state.devices.find((x) => x.id === fact.id);
      if (d) Object.assign(d, fact.changes, { id: d.id });
      break;
    }
    case "alertWords":
      state.alertWords = [...fact.words];
      break;
    case "userMuted":
      state.mutedUsers = state.mutedUsers.filter((m) => m.id !== fact.muted.id);
      state.mutedUsers.push({ ...fact.muted });
      break;
    case "userUnmuted":
      state.mutedUsers = state.mutedUsers.filter((m) => m.id !== fact.id);
      break;
    case "snippetRemoved":
      state.savedSnippets = state.savedSnippets.filter((x) => x.id !== fact.id);
      break;
    default:
      // An unknown fact comes from a newer version; ignore it rather than
      // fail activation (apply must never throw for an accepted fact).
      break;
  }
  return state;
}

export function userToSnapshot(state: UserState): string {
  return JSON.stringify(state);
}

export function userFromSnapshot(data: string, ref: ActorRef): UserState {
  const base = initialUser(ref);
  const snap = JSON.parse(data) as Partial<UserState>;
  return { ...base, ...snap, status: { ...base.status, ...(snap.status ?? {}) } };
}
