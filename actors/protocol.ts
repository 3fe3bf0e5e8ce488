// Typed actor protocols: each method of an actor kind declared once, as a
// TypeBox schema of its arguments (the TypeScript type of `args` for the
// handler and every caller, and the node's run-time check of a gateway's
// request), the type of its reply, and whether a gateway may call it.
//
// A leaf module (typebox and types.ts only), so that addresses.ts and the
// kinds' protocol files stay leaves too. docs/architecture.md, "Actor
// protocols", says how to add a method.

import { Type, type TSchema } from "typebox";
import { Compile } from "typebox/compile";
import type {
  ActorContext,
  ActorRef,
  ArgsOf,
  Behavior,
  Caller,
  Decision,
  Exposure,
  Handler,
  JsonText,
  MethodOf,
  Obj,
  Protocol,
  Ref,
  Reply,
  ReplyOf,
  UntypedRef,
  Value,
} from "./types.ts";

// The protocol types themselves live in types.ts (ActorContext's typed
// `call` names them); importers find them here, with what builds on them.
export type { ArgsOf, MethodOf, MethodSpec, Protocol, Ref, Reply, ReplyOf, UntypedRef } from "./types.ts";
export { JsonText } from "./types.ts";

/** `reply: reply<{ group_id: number }>()`: a method's reply type, for the type checker only. */
export function reply<R = Record<string, never>>(): Reply<R> {
  return {};
}

/** Brand an address with its protocol (the address constructors of addresses.ts). */
export function ref<P extends Protocol>(r: ActorRef): Ref<P> {
  return r as Ref<P>;
}

/**
 * One typed call: `call(groupDirectoryRef(realmId), "members", { groupId })`
 * checks the method name and the arguments and types the reply. The plain
 * ActorRef overload is for the kinds not converted yet (channel, realm,
 * user); it goes when the last kind is converted.
 */
export interface TypedCall {
  <P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
  ): Promise<ReplyOf<P, M>>;
  (ref: UntypedRef, method: string, args: Obj): Promise<Value>;
}

/** The transports' untyped call, which `typedCall` wraps. */
export type UntypedCall = (ref: ActorRef, method: string, args: Obj) => Promise<Value>;

/**
 * Type a transport's call (the gateway's req.call, the CLI's, a worker's):
 * the one place where typed arguments become the wire's plain Obj.
 */
export function typedCall(call: UntypedCall): TypedCall {
  return call as TypedCall;
}

/** A TypedCall made as a given user (node-side workers acting for one, e.g. a scheduled send). */
export interface TypedCallAs {
  <P extends Protocol, M extends MethodOf<P>>(
    ref: Ref<P>,
    method: M,
    args: ArgsOf<P, M>,
    caller: Caller,
  ): Promise<ReplyOf<P, M>>;
  (ref: UntypedRef, method: string, args: Obj, caller: Caller): Promise<Value>;
}

/** Type a transport's call made as a user, as `typedCall` does. */
export function typedCallAs(
  call: (ref: ActorRef, method: string, args: Obj, caller: Caller) => Promise<Value>,
): TypedCallAs {
  return call as TypedCallAs;
}

/** A decision whose reply has the method's reply type. */
export type DecisionOf<R> = Omit<Decision, "reply" | "replyJson"> & { reply?: R; replyJson?: JsonText<R> };

export type HandlerOf<S, P extends Protocol, M extends MethodOf<P>> = (
  state: S,
  args: ArgsOf<P, M>,
  ctx: ActorContext,
  caller: Caller | null,
) => DecisionOf<ReplyOf<P, M>> | Promise<DecisionOf<ReplyOf<P, M>>>;

/** Exactly one handler per method of the protocol. */
export type HandlersOf<S, P extends Protocol> = { [M in MethodOf<P>]: HandlerOf<S, P, M> };

/** A part of a kind's handler table, kept in another file and spread into the whole. */
export type SomeHandlersOf<S, P extends Protocol, M extends MethodOf<P>> = Pick<HandlersOf<S, P>, M>;

type NoExtra<T, P> = { [K in Exclude<keyof T, keyof P>]: never };

/**
 * The kind's whole handler table, checked exactly: a missing, extra or
 * misspelled handler is a compile error, also for tables assembled by
 * spreading several files' parts (where TypeScript's excess property check
 * does not reach). Usage: `handlersOf<State, typeof protocol>()({ ...a, ...b })`.
 */
export function handlersOf<S, P extends Protocol>() {
  return <T extends HandlersOf<S, P>>(table: T & NoExtra<T, P>): HandlersOf<S, P> => table;
}

/** A behaviour declared with a protocol: the runtime Behavior minus what the protocol gives. */
export interface TypedBehavior<S, P extends Protocol> extends Omit<
  Behavior<S>,
  "handlers" | "external" | "protocol"
> {
  protocol: P;
  handlers: HandlersOf<S, P>;
}

/**
 * The runtime's Behavior of a typed one: the handler table by method name,
 * and the `external` allow-list taken from the protocol's marks, so it is
 * declared in one place.
 */
export function defineBehavior<S, P extends Protocol>(b: TypedBehavior<S, P>): Behavior<S> {
  const external: Record<string, Exposure> = {};
  for (const [method, spec] of Object.entries(b.protocol))
    if (spec.external) external[method] = spec.external;
  // The handlers' args types are the protocol's; the runtime hands them
  // plain Obj, which the node has checked for external requests and which
  // internal callers produced through the typed `call`.
  return { ...b, handlers: b.handlers as unknown as Record<string, Handler<S>>, external };
}

const compiled = new WeakMap<TSchema, (value: unknown) => boolean>();

/**
 * Whether `args` fit the method's declared schema (the node checks every
 * external request with it). Each schema is compiled once, on first use.
 */
export function argsFit(protocol: Protocol, method: string, args: unknown): boolean {
  if (!Object.hasOwn(protocol, method)) return false;
  const schema = protocol[method]!.args;
  let check = compiled.get(schema);
  if (check === undefined) {
    const validator = Compile(schema);
    check = (value) => validator.Check(value);
    compiled.set(schema, check);
  }
  return check(args);
}

/**
 * Schema of any plain data (a Value): for arguments a handler validates
 * itself with Zulip's own errors (a group setting's JSON, a raw filter).
 */
export const AnyValue = Type.Unsafe<Value>(Type.Unknown());

/** Schema of a plain object of data, checked no further. */
export const AnyObj = Type.Unsafe<Obj>(Type.Object({}));

/** An integer a JavaScript number holds exactly (ids, counts). */
export const SafeInt = Type.Integer({ minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER });

/** A list of SafeInt. */
export const SafeIntList = Type.Array(SafeInt);

/**
 * An argument of type T that is not checked at run time: only for internal
 * methods (never `external`), whose callers are typed at compile time.
 */
export function trusted<T>() {
  return Type.Unsafe<T>(Type.Unknown());
}
