// Channel folders (Zulip's zerver/actions/channel_folders.py and
// zerver/lib/channel_folders.py; FL 389, 414, 418): realm-wide, held by the
// channel directory beside the channels that name them (a channel's
// folder_id is checked against them, and archiving a folder asks whether a
// channel still uses it, both in one turn). Administrators create, edit,
// archive and reorder them; everyone reads them; every change is announced
// to every active user of the realm.
//
// SNAPSHOT NOTE: the state lives in `DirState.folders`; `initialDir`
// supplies {} to snapshots written before it.

import { errors } from "../errors.ts";
import type { ActorContext, Caller, Obj } from "../types.ts";
import { Turn, isAdmin } from "./access.ts";
import { renderDescription } from "./format.ts";
import type { DirHandler, DirHandlers } from "./protocol.ts";
import type { ChannelFolder, DirState } from "./state.ts";

/** Zulip's ChannelFolder.MAX_NAME_LENGTH and MAX_DESCRIPTION_LENGTH (register's max_channel_folder_*). */
export const FOLDER_NAME_MAX = 60;
export const FOLDER_DESCRIPTION_MAX = 1024;

type FolderFact =
  | { type: "folderCreated"; folder: ChannelFolder }
  | { type: "folderChanged"; folderId: number; changes: Partial<ChannelFolder> }
  /** folder id -> new order, for every folder of the realm. */
  | { type: "foldersReordered"; order: Record<string, number> };

/** Folds the folder facts (applyDirFact ignores them). */
export function applyFolderFact(state: DirState, raw: Obj): DirState {
  const fact = raw as unknown as FolderFact;
  switch (fact.type) {
    case "folderCreated":
      state.folders[String(fact.folder.id)] = { ...fact.folder };
      break;
    case "folderChanged": {
      const f = state.folders[String(fact.folderId)];
      if (f) Object.assign(f, fact.changes);
      break;
    }
    case "foldersReordered":
      for (const [id, order] of Object.entries(fact.order)) {
        const f = state.folders[id];
        if (f) f.order = order;
      }
      break;
    default:
      break;
  }
  return state;
}

export function formatFolder(f: ChannelFolder): Obj {
  return {
    id: f.id,
    name: f.name,
    description: f.description,
    rendered_description: f.renderedDescription,
    order: f.order,
    creator_id: f.creatorId,
    date_created: f.dateCreated,
    is_archived: f.isArchived,
  };
}

/** The realm's folders in their order (ties, which reorders never leave, by id). */
export function folderList(state: DirState, includeArchived: boolean): Obj[] {
  return Object.values(state.folders)
    .filter((f) => includeArchived || !f.isArchived)
    .sort((a, b) => a.order - b.order || a.id - b.id)
    .map(formatFolder);
}

/** Zulip's get_channel_folder_by_id; also what a channel's folder_id must name. */
export function folderById(state: DirState, id: number): ChannelFolder {
  const f = state.folders[String(id)];
  if (!f) throw errors.invalidChannelFolderId();
  return f;
}

/** Zulip's check_channel_folder_name: not blank, printable, unused (any case, archived ones too). */
function checkFolderName(state: DirState, name: string): void {
  if (name.trim() === "") throw errors.channelFolderNameEmpty();
  let pos = 0;
  for (const ch of name) {
    pos++;
    // Python's unicodedata categories Cc, Cs and Cn (1-based position, as Zulip reports it).
    if (/[\p{Cc}\p{Cs}\p{Cn}]/u.test(ch)) throw errors.channelFolderNameBadChar(pos);
  }
  const lower = name.toLowerCase();
  if (Object.values(state.folders).some((f) => f.name.toLowerCase() === lower))
    throw errors.channelFolderNameInUse();
}

function checkLength(value: string, name: string, max: number): string {
  if ([...value].length > max) throw errors.tooLong(name, max);
  return value;
}

async function adminTurn(state: DirState, ctx: ActorContext, caller: Caller | null): Promise<Turn> {
  const t = await Turn.load(ctx, state.realmId);
  if (!isAdmin(t.me(caller).role)) throw errors.mustBeAdmin();
  return t;
}

const everyone = (t: Turn) => t.activeUsers().map((u) => u.userId);

/** POST /channel_folders/create: {name, description} -> {channel_folder_id}. */
const createChannelFolder: DirHandler<"createChannelFolder"> = async (state, args, ctx, caller) => {
  const t = await adminTurn(state, ctx, caller);
  const description = checkLength(args.description ?? "", "description", FOLDER_DESCRIPTION_MAX);
  const name = checkLength(args.name, "name", FOLDER_NAME_MAX);
  checkFolderName(state, name);
  const id = await ctx.nextId(`channelFolder.${state.realmId}`);
  const folder: ChannelFolder = {
    id,
    name,
    description,
    renderedDescription: renderDescription(description),
    order: id,
    creatorId: caller!.userId,
    dateCreated: Math.floor(ctx.now() / 1000),
    isArchived: false,
  };
  return {
    facts: [{ type: "folderCreated", folder } as unknown as Obj],
    events: [
      {
        event: { type: "channel_folder", op: "add", channel_folder: formatFolder(folder) },
        userIds: everyone(t),
      },
    ],
    reply: { channel_folder_id: id },
  };
};

/** GET /channel_folders: {include_archived}. */
const channelFolders: DirHandler<"channelFolders"> = async (state, args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId);
  t.me(caller);
  return { reply: { channel_folders: folderList(state, args.include_archived === true) } };
};

/**
 * PATCH /channel_folders/{id}: {id, name?, description?, is_archived?}.
 * As Zulip's update_channel_folder, one update event per property that
 * changes; archiving needs the folder to hold no channel.
 */
const updateChannelFolder: DirHandler<"updateChannelFolder"> = async (state, args, ctx, caller) => {
  const t = await adminTurn(state, ctx, caller);
  const name = args.name === undefined ? undefined : checkLength(args.name, "name", FOLDER_NAME_MAX);
  const description =
    args.description === undefined
      ? undefined
      : checkLength(args.description, "description", FOLDER_DESCRIPTION_MAX);
  const f = folderById(state, args.id);
  const changes: Partial<ChannelFolder> = {};
  const data: Obj[] = [];
  if (name !== undefined && name !== f.name) {
    checkFolderName(state, name);
    changes.name = name;
    data.push({ name });
  }
  if (description !== undefined && description !== f.description) {
    changes.description = description;
    changes.renderedDescription = renderDescription(description);
    data.push({ description, rendered_description: changes.renderedDescription });
  }
  const archive = args.is_archived;
  if (archive !== undefined && archive !== f.isArchived) {
    if (archive && Object.values(state.channels).some((ch) => ch.folderId === f.id))
      throw errors.channelFolderInUse();
    changes.isArchived = archive;
    data.push({ is_archived: archive });
  }
  if (!data.length) return { reply: {} };
  const userIds = everyone(t);
  return {
    facts: [{ type: "folderChanged", folderId: f.id, changes } as unknown as Obj],
    events: data.map((d) => ({
      event: { type: "channel_folder", op: "update", channel_folder_id: f.id, data: d },
      userIds,
    })),
    reply: {},
  };
};

/** PATCH /channel_folders: {order: folder ids}; every folder of the realm must be in it. */
const reorderChannelFolders: DirHandler<"reorderChannelFolders"> = async (state, args, ctx, caller) => {
  const t = await adminTurn(state, ctx, caller);
  const order = args.order;
  const at = new Map<number, number>();
  order.forEach((id, i) => at.set(id, i));
  const mapping: Record<string, number> = {};
  for (const f of Object.values(state.folders)) {
    const i = at.get(f.id);
    if (i === undefined) throw errors.invalidOrderMapping();
    mapping[String(f.id)] = i;
  }
  return {
    facts: [{ type: "foldersReordered", order: mapping } as unknown as Obj],
    events: [{ event: { type: "channel_folder", op: "reorder", order: [...order] }, userIds: everyone(t) }],
    reply: {},
  };
};

/** POST /register's channel_folders: archived ones too, as Zulip's fetch_initial_state_data. */
const registerChannelFolders: DirHandler<"registerChannelFolders"> = async (state, _args, ctx, caller) => {
  const t = await Turn.load(ctx, state.realmId);
  t.me(caller);
  return { reply: { channel_folders: folderList(state, true) } };
};

export const folderDirectoryHandlers: DirHandlers<
  | "createChannelFolder"
  | "channelFolders"
  | "updateChannelFolder"
  | "reorderChannelFolders"
  | "registerChannelFolders"
> = {
  createChannelFolder,
  channelFolders,
  updateChannelFolder,
  reorderChannelFolders,
  registerChannelFolders,
};
