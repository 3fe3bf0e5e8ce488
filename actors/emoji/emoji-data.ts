// Unicode emoji names and codes, the way Zulip names them.
//
// Source: the `emoji-datasource` package (iamcal's data, which Zulip's own
// build_emoji tool also starts from). Codes follow Zulip's
// `emoji_to_hex_codepoint(unqualify_emoji(e))`: lowercase hex code points
// joined by "-", without the U+FE0F presentation selector; that is
// emoji-datasource's `non_qualified` form when present, else `unified`.
//
// Names: every `short_names` entry of the package, kept as spelled ("+1",
// "-1", "flag-us", "jack_o_lantern"...). Zulip renamed many emoji in
// tools/setup/emoji/emoji_names.py; ZULIP_NAMES below carries the renames we
// confirmed against that file (and, for +1 and working_on_it, against
// Zulip's served emoji data). Where a Zulip name collides with a package name
// for another code (e.g. Zulip's "smile" is U+263A, the package's is
// U+1F604), Zulip wins, since real Zulip clients send Zulip's pairs. Emoji
// not listed keep the package's names: a client that picks such an emoji
// with a Zulip-only name gets "Invalid emoji name.".
//
// Skin-tone variations are not separate emoji in Zulip and are skipped.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

interface DatasourceEntry {
  unified: string;
  non_qualified: string | null;
  short_names: string[];
}

export interface EmojiTables {
  /** name -> code, every name and alias. */
  nameToCode: Map<string, string>;
  /** code -> canonical name. */
  codeToName: Map<string, string>;
}

/** Zulip canonical names and aliases that differ from emoji-datasource, by code. */
const ZULIP_NAMES: Record<string, string[]> = {
  "1f600": ["grinning", "happy"],
  "1f603": ["smiley"],
  "1f604": ["big_smile"],
  "1f601": ["grinning_face_with_smiling_eyes"],
  "1f606": ["laughing", "lol"],
  "1f605": ["sweat_smile"],
  "1f602": ["joy", "tears", "laughter_tears"],
  "1f923": ["rolling_on_the_floor_laughing", "rofl"],
  "263a": ["smile", "relaxed"],
  "1f60a": ["blush"],
  "1f607": ["innocent", "halo"],
  "1f642": ["slight_smile"],
  "1f643": ["upside_down", "oops"],
  "1f609": ["wink"],
  "1f60c": ["relieved"],
  "1f60d": ["heart_eyes", "in_love"],
  "1f618": ["heart_kiss", "blow_a_kiss"],
  "1f617": ["kiss"],
  "1f60b": ["yum"],
  "1f61c": ["stuck_out_tongue_wink", "joking", "crazy"],
  "1f61d": ["stuck_out_tongue"],
  "1f61b": ["mischievous"],
  "1f911": ["money_face", "kaching"],
  "1f917": ["hug", "arms_open"],
  "1f913": ["nerd", "geek"],
  "1f60e": ["sunglasses"],
  "1f60f": ["smirk", "smug"],
  "1f614": ["pensive", "tired"],
  "1f615": ["oh_no", "half_frown", "concerned", "confused"],
  "1f641": ["frown", "slight_frown"],
  "2639": ["sad", "big_frown"],
  "1f621": ["rage", "mad", "grumpy", "very_angry"],
  "1f636": ["speechless", "no_mouth", "blank", "poker_face"],
  "1f610": ["neutral"],
  "1f62e": ["open_mouth", "surprise"],
  "1f633": ["flushed", "embarrassed", "blushing"],
  "1f628": ["fear", "scared", "shock"],
  "1f625": ["exhausted", "disappointed_relieved", "stressed"],
  "1f62c": ["grimacing", "nervous", "anxious"],
  "1f910": ["silence", "quiet", "hush", "zip_it", "lips_are_sealed"],
  "1f637": ["cant_talk", "mask"],
  "1f912": ["sick", "flu", "face_with_thermometer"],
  "1f915": ["hurt", "head_bandage", "injured"],
  "1f4a9": ["poop", "pile_of_poo"],
  "1f47b": ["ghost", "boo", "spooky", "haunted"],
  "1f64c": ["raised_hands", "praise"],
  "1f44f": ["clap", "applause"],
  "1f64f": ["pray", "welcome", "thank_you", "namaste"],
  "1f91d": ["handshake", "done_deal"],
  "1f44d": ["+1", "thumbs_up", "like"],
  "1f44e": ["-1", "thumbs_down"],
  "1f44a": ["fist_bump", "punch"],
  "270c": ["peace_sign", "victory"],
  "1f44c": ["ok", "got_it"],
  "1f446": ["point_up", "this"],
  "1f44b": ["wave", "hello", "hi"],
  "1f440": ["eyes", "looking"],
  "2764": ["heart", "love", "love_you"],
  "1f389": ["tada", "congratulations"],
  "1f334": ["palm_tree"],
  "1f4c5": ["calendar"],
  "1f68c": ["bus", "school_bus"],
  "1f3e0": ["house"],
  "1f6e0": ["working_on_it", "hammer_and_wrench", "tools"],
};

let tables: EmojiTables | null = null;

function toZulipCode(e: DatasourceEntry): string {
  return (e.non_qualified ?? e.unified).toLowerCase();
}

function build(): EmojiTables {
  const require = createRequire(import.meta.url);
  const path = require.resolve("emoji-datasource/emoji.json");
  const entries = JSON.parse(readFileSync(path, "utf8")) as DatasourceEntry[];
  const nameToCode = new Map<string, string>();
  const codeToName = new Map<string, string>();
  for (const e of entries) {
    const code = toZulipCode(e);
    if (!codeToName.has(code)) codeToName.set(code, e.short_names[0]!);
    for (const name of e.short_names) if (!nameToCode.has(name)) nameToCode.set(name, code);
  }
  for (const [code, names] of Object.entries(ZULIP_NAMES)) {
    if (!codeToName.has(code)) continue; // not in this data version
    codeToName.set(code, names[0]!);
    for (const name of names) nameToCode.set(name, code);
  }
  return { nameToCode, codeToName };
}

/** The tables, built on first use (about 2k entries, a few ms). */
export function emojiTables(): EmojiTables {
  tables ??= build();
  return tables;
}
