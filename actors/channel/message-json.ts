// GET /messages' messages as JSON text, kept with the message they were
// built from. A history read's cost was mostly building each message's
// client form and serializing it (formatMessage, shapeForClient, then
// JSON.stringify of the whole page), for messages that rarely change; the
// text of each is now kept, and a read writes the page from the texts and
// the caller's flags (the reply is a `JsonText`).
//
// The text is kept per message object (a WeakMap), so it lives exactly as
// long as the conversation holds the message: its recent window or its
// body cache (conversation-state.ts), whose bounds bound this too. A change
// to a message replaces the object (the body cache) or changes it in place
// (the recent window, applyConvFact's msgChanged), which calls
// `forgetMessageJson`. What the text depends on besides the message is its
// `JsonVariant`, compared field by field: a read with other client options,
// a renamed channel or sender, or a new avatar builds it again.

/** What a message's client form depends on besides the message itself. */
export interface JsonVariant {
  /** The client's options (apply_markdown, client_gravatar, allow_empty_topic_name) as bits. */
  opts: number;
  realmId: number;
  conv: string;
  channelName: string | null;
  /** The sender's current API email, name and avatar version (undefined: the message's own). */
  email: string | undefined;
  fullName: string | undefined;
  avatarVersion: number | undefined;
}

interface Kept {
  variant: JsonVariant;
  /** The message's JSON object without its closing brace, so fields can follow. */
  head: string;
}

const kept = new WeakMap<object, Kept>();

function same(a: JsonVariant, b: JsonVariant): boolean {
  return (
    a.opts === b.opts &&
    a.realmId === b.realmId &&
    a.conv === b.conv &&
    a.channelName === b.channelName &&
    a.email === b.email &&
    a.fullName === b.fullName &&
    a.avatarVersion === b.avatarVersion
  );
}

/**
 * The JSON text of `msg`'s client form without its closing "}" (`build`
 * gives the form when it is not kept for this variant).
 */
export function messageJsonHead(msg: object, variant: JsonVariant, build: () => object): string {
  const k = kept.get(msg);
  if (k !== undefined && same(k.variant, variant)) return k.head;
  const text = JSON.stringify(build());
  const head = text.slice(0, -1);
  kept.set(msg, { variant, head });
  return head;
}

/** The message changed in place: its kept text is stale. */
export function forgetMessageJson(msg: object): void {
  kept.delete(msg);
}
