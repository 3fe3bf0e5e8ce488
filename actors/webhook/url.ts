// The one rule for an outgoing webhook's payload URL, checked where bots are
// created and changed (the gateway's urlParam applies it first; the realm
// actor applies it again for callers that bypass the gateway).

/** An absolute http or https URL with a host. */
export function isWebhookUrl(raw: string): boolean {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return false;
  }
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}
