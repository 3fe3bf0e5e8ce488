// The one registry of Zulip error codes, HTTP statuses and message texts.
//
// Every error the server sends is a ZulipError built from this file, so the
// gateway can map it to Zulip's JSON envelope with no per-route code and tests
// can assert exact texts. Texts and codes follow Zulip's (zerver/lib/exceptions.py
// and the API documentation at https://zulip.com/api/rest-error-handling);
// never invent a variant locally.

export type ErrorExtra = Record<string, unknown>;

export class ZulipError extends Error {
  readonly code: string;
  readonly status: number;
  readonly extra: ErrorExtra;
  readonly headers: Record<string, string>;

  constructor(
    msg: string,
    code = "BAD_REQUEST",
    status = 400,
    extra: ErrorExtra = {},
    headers: Record<string, string> = {},
  ) {
    super(msg);
    this.name = "ZulipError";
    this.code = code;
    this.status = status;
    this.extra = extra;
    this.headers = headers;
  }
}

/**
 * Run the items of a durable hand-off in order. A Zulip error refuses one
 * for good (it is reported and the rest go on); any other error stops the
 * run with false, and the node gives the hand-off again later.
 */
export async function eachHandoff<T>(
  items: readonly T[],
  run: (item: T) => Promise<unknown>,
  refused: (item: T, err: ZulipError) => void,
): Promise<boolean> {
  for (const item of items) {
    try {
      await run(item);
    } catch (err) {
      if (!(err instanceof ZulipError)) return false;
      refused(item, err);
    }
  }
  return true;
}

const WWW_AUTH = { "WWW-Authenticate": 'Basic realm="zulip"' };

/** Constructors for every error the server sends. Keep alphabetical within groups. */
/** Every tus protocol answer names the protocol version it speaks. */
const TUS: Record<string, string> = { "Tus-Resumable": "1.0.0" };

export const errors = {
  // Generic
  badRequest: (msg: string) => new ZulipError(msg),
  notFound: (msg: string) => new ZulipError(msg, "BAD_REQUEST", 404),
  accessDenied: () => new ZulipError("Access denied", "BAD_REQUEST", 403),
  insufficientPermission: () => new ZulipError("Insufficient permission"),
  internal: () => new ZulipError("Internal server error", "", 500),
  /** A gateway's request whose args do not fit the method's declared protocol (actors/protocol.ts). */
  invalidActorArgs: (kind: string, method: string) =>
    new ZulipError(`Invalid arguments for ${kind}.${method}`),
  unavailable: (retryAfter: number) =>
    new ZulipError(
      "Service temporarily unavailable, retry later.",
      "SERVICE_UNAVAILABLE",
      503,
      {},
      { "Retry-After": String(retryAfter) },
    ),

  // Parameters (Zulip's parameter errors; https://zulip.com/api/rest-error-handling)
  missingArgument: (name: string) =>
    new ZulipError(`Missing '${name}' argument`, "REQUEST_VARIABLE_MISSING", 400, { var_name: name }),
  confusingArgument: (a: string, b: string) =>
    new ZulipError(`Can't decide between '${a}' and '${b}' arguments`, "REQUEST_CONFUSING_VAR", 400, {
      var_name1: a,
      var_name2: b,
    }),
  badValue: (name: string, value: string) =>
    new ZulipError(`Bad value for '${name}': ${value}`, "REQUEST_VARIABLE_INVALID", 400, {
      var_name: name,
      bad_value: value,
    }),
  notBoolean: (name: string) => new ZulipError(`${name} is not a boolean`),
  notInteger: (name: string) => new ZulipError(`${name} is not an integer`),
  notString: (name: string) => new ZulipError(`${name} is not a string`),
  notList: (name: string) => new ZulipError(`${name} is not a list`),
  notDict: (name: string) => new ZulipError(`${name} is not a dict`),
  notJson: (name: string) => new ZulipError(`${name} is not valid JSON`),
  invalid: (name: string) => new ZulipError(`Invalid ${name}`),
  tooSmall: (name: string) => new ZulipError(`${name} is too small`),
  tooLarge: (name: string) => new ZulipError(`${name} is too large`),
  tooLong: (name: string, limit: number) =>
    new ZulipError(`${name} is too long (limit: ${limit} characters)`),
  cannotBeBlank: (name: string) => new ZulipError(`${name} cannot be blank`),
  tooShort: (name: string) => new ZulipError(`${name} is too short.`),
  unexpectedKey: (key: string, name: string) => new ZulipError(`Argument "${key}" at ${name} is unexpected`),
  fieldMissing: (name: string, key: string) => new ZulipError(`${name} field is missing: ${key}`),
  unsupportedCombination: (params: string[]) =>
    new ZulipError(`Unsupported parameter combination: ${params.join(", ")}`, "BAD_REQUEST", 400, {
      parameters: params.join(","),
    }),

  // HTTP shape
  methodNotAllowed: (allowed: string[]) =>
    new ZulipError(
      "Method Not Allowed",
      "",
      405,
      { allowed_methods: allowed },
      { Allow: allowed.join(", ") },
    ),
  noSuchRoute: () => new ZulipError("Not Found", "NOT_FOUND", 404),
  payloadTooLarge: () => new ZulipError("Request body too large", "BAD_REQUEST", 413),

  // Authentication (as Zulip: on /api/v1 every basic-auth failure is 401 UNAUTHORIZED)
  notLoggedIn: () =>
    new ZulipError(
      "Not logged in: API authentication or user session required",
      "UNAUTHORIZED",
      401,
      {},
      WWW_AUTH,
    ),
  badAuthHeader: () =>
    new ZulipError("Invalid authorization header for basic auth", "UNAUTHORIZED", 401, {}, WWW_AUTH),
  notBasicAuth: () => new ZulipError("This endpoint requires HTTP basic authentication."),
  unauthorized: (msg: string) => new ZulipError(msg, "UNAUTHORIZED", 401, {}, WWW_AUTH),
  malformedApiKey: () => errors.unauthorized("Malformed API key"),
  invalidApiKey: () => errors.unauthorized("Invalid API key"),
  accountDeactivated: () => errors.unauthorized("Account is deactivated"),
  realmDeactivated: () => errors.unauthorized("This organization has been deactivated"),
  incomingWebhookBot: () => errors.unauthorized("This API is not available to incoming webhook bots."),
  authenticationFailed: () =>
    new ZulipError("Your username or password is incorrect", "AUTHENTICATION_FAILED", 401),
  userDeactivatedLogin: () => new ZulipError("Account is deactivated", "USER_DEACTIVATED", 401),
  realmDeactivatedLogin: () =>
    new ZulipError("This organization has been deactivated", "REALM_DEACTIVATED", 401),
  rateLimited: (retryAfter: number) =>
    new ZulipError(
      "API usage exceeded rate limit",
      "RATE_LIMIT_HIT",
      429,
      { "retry-after": retryAfter },
      { "Retry-After": String(retryAfter) },
    ),

  // Login and passwords (zerver/views/auth.py, zproject/backends.py, zerver/forms.py)
  invalidLoginEmail: () => new ZulipError("Enter a valid email address."),
  newPasswordTooWeak: () => new ZulipError("New password is too weak!"),
  passwordTooWeak: () => new ZulipError("The password is too weak."),
  tooManyAttempts: (seconds: number) =>
    new ZulipError(`You're making too many attempts! Try again in ${seconds} seconds.`),
  wrongPassword: () => new ZulipError("Wrong password!"),

  // Realms (zerver/lib/subdomains.py)
  invalidSubdomain: () => new ZulipError("Invalid subdomain", "NONEXISTENT_SUBDOMAIN", 404),
  realmHostInUse: (host: string) => new ZulipError(`Host '${host}' is already used by another organization`),

  // Roles
  mustBeOwner: () => new ZulipError("Must be an organization owner", "UNAUTHORIZED_PRINCIPAL"),
  guestsCannotBeAdmins: () => new ZulipError("Guests cannot be organization administrators"),
  // Admin API (docs/operations.md "Admin API and placement page"): not a Zulip endpoint,
  // so 401/403 like HTTP says.
  adminInvalidToken: () => errors.unauthorized("Invalid admin token"),
  adminOwnerRequired: () => new ZulipError("Must be an organization owner", "UNAUTHORIZED_PRINCIPAL", 403),
  mustBeAdmin: () => new ZulipError("Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL"),
  /** FL 416: POST /invites(/multiuse) welcome_message_custom_text from a non-administrator (a plain JsonableError). */
  welcomeTextNeedsAdmin: () => new ZulipError("Must be an organization administrator"),
  mustBeMember: () => new ZulipError("Must be an organization member", "UNAUTHORIZED_PRINCIPAL"),

  // Users
  accountDeactivatedEmail: () => new ZulipError("Account has been deactivated."),
  alreadyHasAccount: () => new ZulipError("Already has an account."),
  badNameOrUsername: () => new ZulipError("Bad name or username"),
  botsNotAllowed: () => new ZulipError("This endpoint does not accept bot requests."),
  emailInUse: (email: string) => new ZulipError(`Email '${email}' already in use`),
  invalidAddress: () => new ZulipError("Invalid address."),
  invalidUserId: (id: number | string) => new ZulipError(`Invalid user ID: ${id}`),
  nameInvalidCharacters: () => new ZulipError("Invalid characters in name!"),
  nameInvalidFormat: () => new ZulipError("Invalid format!"),
  nameTooLong: () => new ZulipError("Name too long!"),
  nameTooShort: () => new ZulipError("Name too short!"),
  noSuchUser: () => new ZulipError("No such user"),
  notAuthorizedToCreateUsers: () => new ZulipError("User not authorized to create users"),
  notAuthorizedToChangeEmails: () => new ZulipError("User not authorized to change user emails"),
  userDeactivated: () => new ZulipError("User is deactivated"),
  uniqueNamesRequired: () => new ZulipError("Unique names required in this organization."),
  streamWildcardMentionNotAllowed: () =>
    new ZulipError(
      "You do not have permission to use channel wildcard mentions in this channel.",
      "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
    ),
  cannotMentionGroup: (name: string) =>
    new ZulipError(`You are not allowed to mention user group '${name}'.`),
  topicWildcardMentionNotAllowed: () =>
    new ZulipError(
      "You do not have permission to use topic wildcard mentions in this topic.",
      "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
    ),
  // Muted users (zerver/views/muted_users.py)
  cannotMuteSelf: () => new ZulipError("Cannot mute self"),
  userAlreadyMuted: () => new ZulipError("User already muted"),
  userNotMuted: () => new ZulipError("User is not muted"),
  cannotDeactivateOnlyOwner: () => new ZulipError("Cannot deactivate the only organization owner"),
  cannotDeactivateLastUser: (isLastOwner: boolean) => {
    const entity = isLastOwner ? "organization owner" : "user";
    return new ZulipError(`Cannot deactivate the only ${entity}.`, "CANNOT_DEACTIVATE_LAST_USER", 400, {
      is_last_owner: isLastOwner,
      entity,
    });
  },
  cannotRemoveOnlyOwner: () =>
    new ZulipError("The owner permission cannot be removed from the only organization owner."),
  savedSnippetNotFound: () => new ZulipError("Saved snippet does not exist.", "BAD_REQUEST", 404),
  // Navigation views (zerver/views/navigation_views.py, zerver/lib/navigation_views.py)
  navigationViewNotFound: () => new ZulipError("Navigation view does not exist.", "BAD_REQUEST", 404),
  navigationViewExists: () => new ZulipError("Navigation view already exists."),
  builtInViewNamed: () => new ZulipError("Built-in views cannot have a custom name."),
  customViewUnnamed: () => new ZulipError("Custom views must have a valid name."),
  tooManyNavigationViews: (limit: number) => new ZulipError(`Too many navigation views (limit: ${limit})`),
  // Drafts (zerver/lib/drafts.py, zerver/lib/addressee.py, zerver/lib/recipient_users.py)
  draftNotFound: () => new ZulipError("Draft does not exist", "BAD_REQUEST", 404),
  draftsSyncDisabled: () => new ZulipError("User has disabled synchronizing drafts."),
  /** Not Zulip's (it has no cap): a user's synchronized drafts are kept to this many. */
  tooManyDrafts: (limit: number) => new ZulipError(`Too many drafts (limit: ${limit})`),
  messageNullBytes: () => new ZulipError("Message must not contain null bytes"),
  timestampNegative: () => new ZulipError("Timestamp must not be negative."),
  topicNullBytes: () => new ZulipError("Topic must not contain null bytes"),
  /** get_user_profiles_by_ids: no colon, unlike invalidUserId. */
  invalidRecipientId: (id: number) => new ZulipError(`Invalid user ID ${id}`),
  noLongerUsingZulip: (email: string) => new ZulipError(`'${email}' is no longer using Zulip.`),
  // Scheduled messages (zerver/views/scheduled_messages.py, zerver/actions/scheduled_messages.py,
  // zerver/lib/recipient_parsing.py)
  scheduledMessageNotFound: () => new ZulipError("Scheduled message does not exist", "BAD_REQUEST", 404),
  scheduledAlreadySent: () => new ZulipError("Scheduled message was already sent"),
  deliveryTimeNotInFuture: () => new ZulipError("Scheduled delivery time must be in the future."),
  // Message reminders (zerver/lib/reminders.py, FL 381/399/415).
  reminderNotFound: () => new ZulipError("Reminder does not exist", "BAD_REQUEST", 404),
  reminderNoteTooLong: (max: number) => new ZulipError(`Maximum reminder note length: ${max} characters`),
  // Message reports (zerver/views/message_report.py, FL 382).
  reportNeedsExplanation: () => new ZulipError("An explanation is required."),
  reportingDisabled: () => new ZulipError("Message reporting is not enabled in this organization."),
  scheduledRecipientRequired: () =>
    new ZulipError("Recipient required when updating type of scheduled message."),
  scheduledTopicRequired: () =>
    new ZulipError("Topic required when updating scheduled message type to stream."),
  scheduledTooLate: () => new ZulipError("Message could not be sent at the scheduled time."),
  channelIdDataType: () => new ZulipError("Invalid data type for channel ID"),
  recipientsDataType: () => new ZulipError("Invalid data type for recipients"),
  recipientsOnlyUserIds: () => new ZulipError("Recipient list may only contain user IDs"),
  messageNeedsRecipients: () => new ZulipError("Message must have recipients"),
  /** Not Zulip's (it has no cap): a user's undelivered scheduled messages are kept to this many. */
  tooManyScheduledMessages: (limit: number) =>
    new ZulipError(`Too many scheduled messages (limit: ${limit})`),
  // Push tokens (zerver/lib/push_notifications.py validate_token, remove_push_device_token)
  emptyOrInvalidToken: () => new ZulipError("Empty or invalid length token"),
  invalidApnsToken: () => new ZulipError("Invalid APNS token"),
  invalidAppId: () => new ZulipError("Invalid app ID"),
  tokenDoesNotExist: () => new ZulipError("Token does not exist"),
  // E2EE push devices (zerver/views/devices.py, zerver/views/push_notifications.py
  // register_push_device and send_e2ee_test_push_notification_api; the bouncer
  // errors' texts are the spec's, their statuses Zulip's tests').
  invalidDeviceId: () => new ZulipError("Invalid `device_id`"),
  pushServiceNotConfigured: () =>
    new ZulipError(
      "Server is not configured to use push notification service.",
      "PUSH_SERVICE_NOT_CONFIGURED",
    ),
  pushFieldsMissing: () =>
    new ZulipError("Missing parameters: must provide either all push key fields, all token fields, or both."),
  noRegistrationToRotateKey: () => new ZulipError("No push registration exists to rotate key for."),
  noRegistrationToRotateToken: () => new ZulipError("No push registration exists to rotate token for."),
  registrationInProgress: () => new ZulipError("A registration for the device already in progress."),
  invalidPushKey: () => new ZulipError("Invalid `push_key`"),
  tokenIdNotBase64: () => new ZulipError("`token_id` is not Base64 encoded"),
  /** A pydantic validator's failure as Zulip's typed_endpoint words it. */
  valueError: (name: string, detail: string) => new ZulipError(`Invalid ${name}: Value error, ${detail}`),
  noActivePushDevice: () => new ZulipError("No active registered push device", "NO_ACTIVE_PUSH_DEVICE"),
  pushAdminActionRequired: () =>
    new ZulipError(
      "Push notification configuration issue on server, contact the server administrator or retry later.",
      "ADMIN_ACTION_REQUIRED",
      403,
    ),
  failedToConnectBouncer: () =>
    new ZulipError(
      "Network error while connecting to the push notification service.",
      "FAILED_TO_CONNECT_BOUNCER",
      502,
    ),
  internalServerErrorOnBouncer: () =>
    new ZulipError(
      "Internal server error on the push notification service, retry later.",
      "INTERNAL_SERVER_ERROR_ON_BOUNCER",
      502,
    ),
  // Bots (zerver/views/users.py add_bot_backend, patch_bot_backend; zerver/lib/users.py)
  noSuchBot: () => new ZulipError("No such bot"),
  usernameInUse: () => new ZulipError("Username already in use"),
  botNameInUse: () => new ZulipError("Name is already in use!"),
  invalidBotType: () => new ZulipError("Invalid bot type"),
  invalidInterfaceType: () => new ZulipError("Invalid interface type"),
  notAUrl: (name: string) => new ZulipError(`${name} is not a URL`),
  botOwnerNoSuchUser: () => new ZulipError("Failed to change owner, no such user"),
  botOwnerDeactivated: () => new ZulipError("Failed to change owner, user is deactivated"),
  botOwnerIsBot: () => new ZulipError("Failed to change owner, bots can't own other bots"),

  // Event queues (zerver/tornado/exceptions.py, event_queue.py, views/events_register.py)
  badEventQueueId: (queueId: string) =>
    new ZulipError(`Bad event queue ID: ${queueId}`, "BAD_EVENT_QUEUE_ID", 400, { queue_id: queueId }),
  eventAlreadyPruned: (lastEventId: number) =>
    new ZulipError(`An event newer than ${lastEventId} has already been pruned!`),
  eventNotInQueue: (lastEventId: number) => new ZulipError(`Event ${lastEventId} was not in this queue`),
  missingQueueId: () => new ZulipError("Missing 'queue_id' argument"),
  missingLastEventId: () => new ZulipError("Missing 'last_event_id' argument"),
  anonymousRegisterParam: (key: string) => new ZulipError(`Invalid '${key}' parameter for anonymous request`),
  userNotAuthorizedForQuery: () => new ZulipError("User not authorized for this query"),
  narrowOperatorNotSupported: (operator: string) => new ZulipError(`Operator ${operator} not supported.`),
  notLength: (name: string, n: number) => new ZulipError(`${name} is not length ${n}`),

  // Settings (zerver/views/user_settings.py)
  cannotChangeForOthers: () => new ZulipError("Cannot change this setting for other users."),
  emailChangesDisabled: () => new ZulipError("Email address changes are disabled in this organization."),
  invalidBatchingPeriod: (seconds: number) =>
    new ZulipError(`Invalid email batching period: ${seconds} seconds`),
  invalidNotificationSound: (sound: string) => new ZulipError(`Invalid notification sound '${sound}'`),
  invalidWithDetail: (name: string, detail: string) => new ZulipError(`Invalid ${name}: ${detail}`),
  targetUsersEmpty: () => new ZulipError("Either user_ids or group_ids must be provided."),

  // Channels (zerver/lib/streams.py, zerver/views/streams.py)
  invalidChannelId: () => new ZulipError("Invalid channel ID"),
  invalidChannelName: (name: string) => new ZulipError(`Invalid channel name '${name}'`),
  channelDoesNotExist: (name: string) =>
    new ZulipError(`Channel '${name}' does not exist`, "STREAM_DOES_NOT_EXIST", 400, { stream: name }),
  channelAlreadyExists: (name: string) => new ZulipError(`Channel '${name}' already exists`),
  channelNameEmpty: () => new ZulipError("Channel name can't be empty."),
  channelNameTooLong: (limit: number) =>
    new ZulipError(`Channel name too long (limit: ${limit} characters).`),
  channelNameBadChar: (pos: number) =>
    new ZulipError(`Invalid character in channel name, at position ${pos}.`),
  cannotAdministerChannel: () => new ZulipError("You do not have permission to administer this channel."),
  // Channel folders (zerver/lib/channel_folders.py, zerver/views/channel_folders.py)
  invalidChannelFolderId: () => new ZulipError("Invalid channel folder ID"),
  channelFolderNameEmpty: () => new ZulipError("Channel folder name can't be empty."),
  channelFolderNameBadChar: (pos: number) =>
    new ZulipError(`Invalid character in channel folder name, at position ${pos}.`),
  channelFolderNameInUse: () => new ZulipError("Channel folder name already in use"),
  invalidOrderMapping: () => new ZulipError("Invalid order mapping."),
  channelFolderInUse: () =>
    new ZulipError("You need to remove all the channels from this folder to archive it."),
  unableToAccessChannel: (name: string) => new ZulipError(`Unable to access channel (${name}).`),
  principalNotAuthorized: (principal: string) =>
    new ZulipError(
      `User not authorized to execute queries on behalf of '${principal}'`,
      "UNAUTHORIZED_PRINCIPAL",
      403,
    ),
  privateCannotBeDefault: () => new ZulipError("Private channels cannot be made default."),
  historyPublicRequired: () => new ZulipError("Invalid parameters"),
  onlyUnarchiveSupported: () => new ZulipError("Channel is already archived."),
  notArchived: () => new ZulipError("Channel is not archived."),
  webPublicDisabled: () => new ZulipError("Web-public channels are not enabled."),
  unknownSubscriptionProperty: (name: string) => new ZulipError(`Unknown subscription property: ${name}`),
  notSubscribed: () => new ZulipError("Not subscribed to channel ID"),
  invalidColor: (name: string) => new ZulipError(`${name} is not a valid hex color code`),

  // Messages (zerver/lib/message.py, zerver/actions/message_send.py, zerver/views/message_*.py)
  invalidMessages: () => new ZulipError("Invalid message(s)"),
  invalidFlag: (flag: string) => new ZulipError(`Invalid flag: '${flag}'`),
  flagNotEditable: (flag: string) => new ZulipError(`Flag not editable: '${flag}'`),
  invalidFlagOperation: (op: string) => new ZulipError(`Invalid message flag operation: '${op}'`),
  noSuchTopic: (topic: string) => new ZulipError(`No such topic '${topic}'`),
  messageEmpty: () => new ZulipError("Message must not be empty"),
  topicBadChar: (pos: number) => new ZulipError(`Invalid character in topic, at position ${pos}!`),
  notAuthorizedToSend: (name: string) => new ZulipError(`Not authorized to send to channel '${name}'`),
  emptyTopicDisallowed: () =>
    new ZulipError("Sending messages to the general chat is not allowed in this channel."),
  onlyEmptyTopic: () => new ZulipError("Only the general chat topic is allowed in this channel."),
  invalidEmail: (email: string) => new ZulipError(`Invalid email '${email}'`),
  invalidAnchor: () => new ZulipError("Invalid anchor"),
  tooManyMessages: () => new ZulipError("Too many messages requested (maximum 5000)."),
  anchorExcluded: () => new ZulipError("The anchor can only be excluded at an end of the range"),
  badNarrow: (desc: string) =>
    new ZulipError(`Invalid narrow operator: ${desc}`, "BAD_NARROW", 400, { desc }),
  badNarrowCombination: (desc: string) =>
    new ZulipError(`Invalid narrow operator combination: ${desc}`, "BAD_NARROW", 400, { desc }),
  reactionExists: () => new ZulipError("Reaction already exists.", "REACTION_ALREADY_EXISTS"),
  reactionMissing: () => new ZulipError("Reaction doesn't exist.", "REACTION_DOES_NOT_EXIST"),
  cannotEditMessage: () => new ZulipError("You don't have permission to edit this message"),
  cannotDeleteMessage: () => new ZulipError("You don't have permission to delete this message"),
  nothingToChange: () => new ZulipError("Nothing to change"),
  missingTopic: () => new ZulipError("Missing topic"),
  channelIdDoesNotExist: (id: number) =>
    new ZulipError(`Channel with ID '${id}' does not exist`, "STREAM_DOES_NOT_EXIST", 400, { stream_id: id }),
  exactlyOneChannel: () => new ZulipError("Must specify exactly 1 channel ID for channel messages"),
  missingAnchor: () => new ZulipError("Missing 'anchor' argument."),
  editTimeLimit: () => new ZulipError("The time limit for editing this message has passed"),
  topicEditTimeLimit: () => new ZulipError("The time limit for editing this message's topic has passed."),
  supplyStream: () => new ZulipError("Please supply 'stream'."),
  chooseStream: () => new ZulipError("Please choose one: 'stream' or 'stream_id'."),
  noPostPermission: () => new ZulipError("You do not have permission to post in this channel."),
  // FL 270: direct_message_permission_group and direct_message_initiator_group.
  directMessagesDisabled: () => new ZulipError("Direct messages are disabled in this organization."),
  directMessageNotAuthorized: () =>
    new ZulipError("This conversation does not include any users who can authorize it."),
  cannotInitiateDirectMessages: () =>
    new ZulipError("You do not have permission to initiate direct message conversations."),
  cannotMoveMessage: () => new ZulipError("You don't have permission to move this message"),
  moveChannelTimeLimit: () => new ZulipError("The time limit for editing this message's channel has passed"),
  messageEditingDisabled: () => new ZulipError("Your organization has turned off message editing"),
  cannotResolveTopics: () => new ZulipError("You don't have permission to resolve topics in this channel."),
  deleteTimeLimit: () => new ZulipError("The time limit for deleting this message has passed"),
  /** Zulip's MessageMoveError: a change_all move reaching messages older than the move limit. */
  moveMessagesTimeLimitExceeded: (firstAllowed: number | null, total: number, allowed: number) =>
    new ZulipError(
      `You only have permission to move the ${allowed}/${total} most recent messages in this topic.`,
      "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
      400,
      {
        first_message_id_allowed_to_move: firstAllowed,
        total_messages_in_topic: total,
        total_messages_allowed_to_move: allowed,
      },
    ),
  dmCannotMoveToChannel: () => new ZulipError("Direct messages cannot be moved to channels."),
  contentWhileMovingChannel: () => new ZulipError("Cannot change message content while changing channel"),

  // User groups
  invalidUserGroupId: (id: number | string) => new ZulipError(`Invalid user group ID: ${id}`),
  // (zerver/lib/user_groups.py, zerver/views/user_groups.py, zerver/lib/exceptions.py)
  invalidUserGroup: () => new ZulipError("Invalid user group"),
  userGroupDeactivated: () => new ZulipError("User group is deactivated."),
  expectationMismatch: () =>
    new ZulipError("'old' value does not match the expected value.", "EXPECTATION_MISMATCH"),
  // FL 379: PATCH /messages/{id} prev_content_sha256 names a content the message no longer has.
  prevContentMismatch: () =>
    new ZulipError(
      "'prev_content_sha256' value does not match the expected value.",
      "EXPECTATION_MISMATCH",
      400,
      {
        field_name: "prev_content_sha256",
      },
    ),
  systemGroupRequired: (setting: string) =>
    new ZulipError(`'${setting}' must be a system user group.`, "SYSTEM_GROUP_REQUIRED", 400, {
      setting_name: setting,
    }),
  settingCannotBeGroup: (setting: string, group: string) =>
    new ZulipError(`'${setting}' setting cannot be set to '${group}' group.`),
  cannotDeactivateGroupInUse: (objections: unknown[]) =>
    new ZulipError("Cannot deactivate user group in use.", "CANNOT_DEACTIVATE_GROUP_IN_USE", 400, {
      objections,
    }),
  groupNameEmpty: () => new ZulipError("User group name can't be empty!"),
  groupNameTooLong: (max: number) => new ZulipError(`User group name cannot exceed ${max} characters.`),
  groupNameBadPrefix: (prefix: string) => new ZulipError(`User group name cannot start with '${prefix}'.`),
  groupNameInUse: (name: string) => new ZulipError(`User group '${name}' already exists.`),
  noNewDataSupplied: () => new ZulipError("No new data supplied"),
  nothingToDoMembers: () =>
    new ZulipError(
      'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".',
    ),
  nothingToDoSubgroups: () => new ZulipError('Nothing to do. Specify at least one of "add" or "delete".'),
  alreadyGroupMember: (id: number) => new ZulipError(`User ${id} is already a member of this group`),
  notGroupMember: (id: number) => new ZulipError(`There is no member '${id}' in this user group`),
  alreadySubgroup: (id: number) => new ZulipError(`User group ${id} is already a subgroup of this group.`),
  notSubgroup: (id: number) => new ZulipError(`User group ${id} is not a subgroup of this group.`),
  subgroupCycle: (id: number) =>
    new ZulipError(`User group ${id} is already a subgroup of one of the passed subgroups.`),
  notAllowedForGuests: () => new ZulipError("Not allowed for guest users"),

  // Linkifiers (zerver/views/realm_linkifiers.py, zerver/models/linkifiers.py)
  /** Zulip's ValidationFailureError: the first message, and all messages by field. */
  validationFailed: (msg: string, byField: Record<string, string[]>) =>
    new ZulipError(msg, "BAD_REQUEST", 400, { errors: byField }),
  missingDependentParameter: (required: string, set: string) =>
    new ZulipError(`Parameter '${required}' must be set when '${set}' is set.`),
  linkifierNotFound: () => new ZulipError("Linkifier not found."),
  filterNotFound: () => new ZulipError("Filter not found"),
  linkifierOrderDuplicates: () => new ZulipError("The ordered list must not contain duplicated linkifiers"),
  linkifierOrderIncomplete: () =>
    new ZulipError("The ordered list must enumerate all existing linkifiers exactly once"),

  // Status and emoji (spec: Errors)
  noNewValues: () => new ZulipError("Client did not pass any new values."),
  emojiNameRequired: () =>
    new ZulipError("Client must pass emoji_name if they pass either emoji_code or reaction_type."),
  emojiDoesNotExist: (name: string) => new ZulipError(`Emoji '${name}' does not exist`),
  invalidEmojiName: () => new ZulipError("Invalid emoji name."),
  invalidEmojiCode: () => new ZulipError("Invalid emoji code."),
  invalidEmojiType: () => new ZulipError("Invalid emoji type."),
  invalidCustomEmoji: () => new ZulipError("Invalid custom emoji."),
  invalidCustomEmojiName: () => new ZulipError("Invalid custom emoji name."),
  deactivatedCustomEmoji: () => new ZulipError("This custom emoji has been deactivated."),
  // Custom emoji (zerver/views/realm_emoji.py, zerver/lib/emoji.py, zerver/lib/thumbnail.py)
  emojiNameMissing: () => new ZulipError("Emoji name is missing"),
  emojiNameBadEnd: () => new ZulipError("Emoji names must end with either a letter or digit."),
  emojiNameBadChars: () =>
    new ZulipError(
      "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.",
    ),
  customEmojiExists: () => new ZulipError("A custom emoji with this name already exists."),
  exactlyOneFile: () => new ZulipError("You must upload exactly one file."),
  overrideDefaultEmoji: () => new ZulipError("Only administrators can override default emoji."),
  emojiFileTooLarge: (mib: number) =>
    new ZulipError(`Uploaded file is larger than the allowed limit of ${mib} MiB`),
  invalidImageFormat: () => new ZulipError("Invalid image format", "BAD_IMAGE"),
  undecodableImage: () =>
    new ZulipError("Could not decode image; did you upload an image file?", "BAD_IMAGE"),
  /** DELETE /realm/emoji/{name}: ResourceNotFoundError since feature level 190. */
  customEmojiNotFound: (name: string) => new ZulipError(`Emoji '${name}' does not exist`, "BAD_REQUEST", 404),
  notEmojiAuthor: () => new ZulipError("Must be an organization administrator or emoji author"),

  // Message history and read receipts (zerver/views/message_edit.py, read_receipts.py)
  editHistoryDisabled: () => new ZulipError("Message edit history is disabled in this organization"),
  readReceiptsDisabled: () => new ZulipError("Read receipts are disabled in this organization."),
  // Typing notifications (zerver/views/typing.py, zerver/actions/typing.py): plain
  // JsonableErrors, so the missing-argument texts carry BAD_REQUEST, not REQUEST_VARIABLE_MISSING.
  typingDisabledChannel: () => new ZulipError("User has disabled typing notifications for channel messages"),
  typingDisabledDirect: () => new ZulipError("User has disabled typing notifications for direct messages"),
  typingEmptyTo: () => new ZulipError("Empty 'to' list"),
  typingInvalidUserId: (id: number) => new ZulipError(`Invalid user ID ${id}`),
  typingMissingStreamId: () => new ZulipError("Missing 'stream_id' argument"),
  typingMissingTo: () => new ZulipError("Missing 'to' argument"),

  // Invitations (zerver/views/invite.py, zerver/actions/invites.py, zerver/lib/exceptions.py
  // InvitationError) and the sign-up page (confirmation/views.py).
  invitationFailed: (
    msg: string,
    failed: [string, string, boolean][],
    sent: boolean,
    dailyLimitReached = false,
  ) =>
    new ZulipError(msg, "INVITATION_FAILED", 400, {
      errors: failed,
      sent_invitations: sent,
      license_limit_reached: false,
      daily_limit_reached: dailyLimitReached,
    }),
  inviteNeedsAdmin: () => new ZulipError("Must be an organization administrator"),
  inviteNoEmails: () => new ZulipError("You must specify at least one email address."),
  inviteInvalidChannel: (id: number) => new ZulipError(`Invalid channel ID ${id}. No invites were sent.`),
  inviteCannotSubscribe: () =>
    new ZulipError("You do not have permission to subscribe other users to channels."),
  invitationAlreadyRevoked: () => new ZulipError("Invitation has already been revoked"),
  noSuchInvitation: () => new ZulipError("No such invitation"),
  confirmationNotFound: () =>
    new ZulipError("Whoops. We couldn't find your confirmation link in the system.", "BAD_REQUEST", 404),
  confirmationExpired: () =>
    new ZulipError("The confirmation link has expired or been deactivated.", "BAD_REQUEST", 404),
  // Uploads and attachments (zerver/views/upload.py, zerver/views/attachments.py)
  uploadNoFile: () => new ZulipError("You must specify a file to upload"),
  uploadOneFile: () => new ZulipError("You may only upload one file at a time"),
  uploadTooLarge: (mib: number) =>
    new ZulipError(`File is larger than this server's configured maximum upload size (${mib} MiB).`),
  invalidAttachment: () => new ZulipError("Invalid attachment"),
  // The tus protocol at /api/v1/tus (gateway/routes/tus.ts). Zulip's tusd
  // hooks answer the first two with these texts and statuses; the protocol
  // errors carry tusd's statuses and texts, and every one Tus-Resumable.
  tusSizeDeferred: () => new ZulipError("SizeIsDeferred is not supported", "BAD_REQUEST", 411, {}, TUS),
  tusTooLarge: (mib: number) =>
    new ZulipError(
      `File is larger than this server's configured maximum upload size (${mib} MiB).`,
      "BAD_REQUEST",
      413,
      {},
      TUS,
    ),
  tusUnsupportedVersion: () =>
    new ZulipError(
      "missing, invalid or unsupported Tus-Resumable header",
      "BAD_REQUEST",
      412,
      {},
      {
        ...TUS,
        "Tus-Version": "1.0.0",
      },
    ),
  tusInvalidLength: () =>
    new ZulipError("missing or invalid Upload-Length header", "BAD_REQUEST", 400, {}, TUS),
  tusInvalidOffset: () =>
    new ZulipError("missing or invalid Upload-Offset header", "BAD_REQUEST", 400, {}, TUS),
  tusInvalidMetadata: () => new ZulipError("invalid Upload-Metadata header", "BAD_REQUEST", 400, {}, TUS),
  tusInvalidContentType: () =>
    new ZulipError("missing or invalid Content-Type header", "BAD_REQUEST", 415, {}, TUS),
  tusUploadNotFound: () => new ZulipError("upload not found", "BAD_REQUEST", 404, {}, TUS),
  tusMismatchedOffset: () => new ZulipError("mismatched offset", "BAD_REQUEST", 409, {}, TUS),
  tusSizeExceeded: () => new ZulipError("upload's size exceeded", "BAD_REQUEST", 413, {}, TUS),
  tusTooManyChunks: () => new ZulipError("too many chunks for one upload", "BAD_REQUEST", 400, {}, TUS),
  /** Zulip answers these two with an HTML page; here they keep the JSON envelope. */
  uploadNotFound: () => new ZulipError("File not found.", "BAD_REQUEST", 404),
  uploadNotAuthorized: () => new ZulipError("You are not authorized to view this file.", "BAD_REQUEST", 403),
  invalidUploadToken: () => new ZulipError("Invalid token"),
  invalidUploadFilename: () => new ZulipError("Invalid filename"),
  // POST /mobile_push/test_notification (the spec's InvalidPushDeviceTokenError
  // and InvalidRemotePushDeviceTokenError).
  invalidPushDeviceToken: () => new ZulipError("Device not recognized", "INVALID_PUSH_DEVICE_TOKEN"),
  invalidRemotePushDeviceToken: () =>
    new ZulipError("Device not recognized by the push bouncer", "INVALID_REMOTE_PUSH_DEVICE_TOKEN"),
} as const;
