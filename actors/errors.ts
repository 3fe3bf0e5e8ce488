// The one registry of Zulip error codes, HTTP statuses and message texts.
//
// Every error the server sends is a ZulipError built from this file, so the
// gateway can map it to Zulip's JSON envelope with no per-route code and tests
// can assert exact texts. Texts and codes follow Zulip (see
// ../shared/reference/zulip-facts.md §1); never invent a variant locally.

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

/** Raised inside a node when it no longer owns the shard of the addressed actor. */
export class MovedError extends Error {
  constructor(readonly shard: number) {
    super(`shard ${shard} moved`);
    this.name = "MovedError";
  }
}

/** Raised when a write was refused because a newer lease epoch exists. */
export class FencedError extends Error {
  constructor(
    readonly shard: number,
    readonly epoch: number,
  ) {
    super(`write to shard ${shard} with stale epoch ${epoch} refused`);
    this.name = "FencedError";
  }
}

/** A node or gateway is overloaded or nothing could answer in time. */
export class UnavailableError extends Error {
  constructor(
    msg: string,
    readonly retryAfterSeconds = 1,
  ) {
    super(msg);
    this.name = "UnavailableError";
  }
}

const WWW_AUTH = { "WWW-Authenticate": 'Basic realm="zulip"' };

/** Constructors for every error the server sends. Keep alphabetical within groups. */
export const errors = {
  // Generic
  badRequest: (msg: string) => new ZulipError(msg),
  notFound: (msg: string) => new ZulipError(msg, "BAD_REQUEST", 404),
  accessDenied: () => new ZulipError("Access denied", "BAD_REQUEST", 403),
  insufficientPermission: () => new ZulipError("Insufficient permission"),
  internal: () => new ZulipError("Internal server error", "", 500),
  unavailable: (retryAfter: number) =>
    new ZulipError(
      "Service temporarily unavailable, retry later.",
      "SERVICE_UNAVAILABLE",
      503,
      {},
      { "Retry-After": String(retryAfter) },
    ),

  // Parameters (zulip-facts §1, §2)
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

  // Authentication (zulip-facts §1: on /api/v1 every basic-auth failure is 401 UNAUTHORIZED)
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
  mustBeAdmin: () => new ZulipError("Must be an organization administrator", "UNAUTHORIZED_PRINCIPAL"),
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
  userDeactivated: () => new ZulipError("User is deactivated"),

  // Settings (zerver/views/user_settings.py)
  cannotChangeForOthers: () => new ZulipError("Cannot change this setting for other users."),
  emailChangesDisabled: () => new ZulipError("Email address changes are disabled in this organization."),
  invalidBatchingPeriod: (seconds: number) =>
    new ZulipError(`Invalid email batching period: ${seconds} seconds`),
  invalidNotificationSound: (sound: string) => new ZulipError(`Invalid notification sound '${sound}'`),
  invalidWithDetail: (name: string, detail: string) => new ZulipError(`Invalid ${name}: ${detail}`),
  targetUsersEmpty: () => new ZulipError("Either user_ids or group_ids must be provided."),

  // User groups
  invalidUserGroupId: (id: number | string) => new ZulipError(`Invalid user group ID: ${id}`),

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
} as const;

/** Normalise anything thrown into a ZulipError for the HTTP boundary. */
export function toZulipError(err: unknown): ZulipError {
  if (err instanceof ZulipError) return err;
  if (err instanceof UnavailableError) return errors.unavailable(err.retryAfterSeconds);
  return errors.internal();
}
