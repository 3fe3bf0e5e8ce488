// A realm's custom emoji as the realm actor keeps them (a copy the emoji
// directory sends it) and the emoji kind serves them. A leaf: the realm's
// protocol and state name it without entering the emoji kind's door, which
// itself imports the realm's.

/** A realm's custom emoji, keyed by id (string). */
export interface RealmEmoji {
  id: string;
  name: string;
  deactivated: boolean;
}
