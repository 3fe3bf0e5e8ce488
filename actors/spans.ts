// Received spans (docs/architecture.md, "Received rows"): the message-id
// ranges during which a user was subscribed to a channel. The channel
// directory keeps them with each subscription; conversations read them to
// tell which of their messages a user received. A leaf: both kinds import it.

/**
 * Message-id spans [from, to) during which a user was subscribed: the
 * messages of the channel the user received (Zulip's UserMessage rows,
 * which this server does not write per recipient). `to` is null while
 * subscribed. Both bounds are ids taken from the realm's message counter
 * when the subscription changed, so no message has exactly that id.
 */
export type Span = [from: number, to: number | null];

/** Whether a message id falls in one of the spans. */
export function inSpans(spans: readonly Span[], id: number): boolean {
  for (const [from, to] of spans) if (id >= from && (to === null || id < to)) return true;
  return false;
}
