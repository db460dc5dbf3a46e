/**
 * The one symbol table of the device runtime (native/include/pdrt.h), written once in neutral type
 * names that each runtime's binding maps to its own FFI types, so Bun and Deno call the same C
 * functions with the same arguments. Every status-returning function is declared `i32`; ids are
 * `u64` (bigint); `ctx` is the opaque context handle, carried as a number; `buf` a caller buffer.
 */

/** Neutral argument types: `ctx` is a pdrt_ctx handle (a number), `buf` a typed array (or null). */
export type NativeType = 'ctx' | 'buf' | 'i32' | 'u16' | 'u32' | 'i64' | 'u64';

export interface SymbolSpec {
  readonly args: readonly NativeType[];
  readonly returns: 'i32';
}

export const SYMBOLS = {
  pdrt_abi_version: { args: [], returns: 'i32' },
  pdrt_create: { args: ['u64', 'u32', 'buf', 'u16', 'buf', 'buf'], returns: 'i32' },
  pdrt_listen_port: { args: ['ctx', 'buf'], returns: 'i32' },
  pdrt_destroy: { args: ['ctx'], returns: 'i32' },
  pdrt_set_option: { args: ['ctx', 'u32', 'i64'], returns: 'i32' },
  pdrt_link: { args: ['ctx', 'buf', 'u32', 'i32', 'buf'], returns: 'i32' },
  pdrt_unlink: { args: ['ctx', 'buf', 'u32', 'i32', 'i32', 'buf'], returns: 'i32' },
  pdrt_poll_events: { args: ['ctx', 'buf', 'u32', 'buf'], returns: 'i32' },
  pdrt_wait_events: { args: ['ctx', 'i32'], returns: 'i32' },
  pdrt_list_links: { args: ['ctx', 'buf', 'u32', 'buf', 'buf'], returns: 'i32' },
  pdrt_register_blocks: { args: ['ctx', 'u64', 'u32', 'u32'], returns: 'i32' },
  pdrt_unregister_blocks: { args: ['ctx', 'u64'], returns: 'i32' },
  pdrt_write_blocks: { args: ['ctx', 'u64', 'buf', 'u32', 'buf', 'u64'], returns: 'i32' },
  pdrt_read_blocks: { args: ['ctx', 'u64', 'buf', 'u32', 'buf', 'u64'], returns: 'i32' },
  pdrt_pull_blocks: { args: ['ctx', 'u64', 'u64', 'buf', 'u64', 'buf', 'u32', 'i32'], returns: 'i32' },
  pdrt_push_blocks: { args: ['ctx', 'u64', 'u64', 'buf', 'u64', 'buf', 'u32', 'i32'], returns: 'i32' },
} as const satisfies Record<string, SymbolSpec>;

type JsArg<T extends NativeType> = T extends 'ctx'
  ? number
  : T extends 'buf'
    ? ArrayBufferView | null
    : T extends 'i64' | 'u64'
      ? bigint | number
      : number;

type JsArgs<A extends readonly NativeType[]> = { -readonly [K in keyof A]: JsArg<A[K]> };

type JsFunction<S extends SymbolSpec> = (...args: JsArgs<S['args']>) => number;

/** A symbol table as callable functions, whichever runtime opened it. */
export type Callable<T extends Record<string, SymbolSpec>> = { readonly [N in keyof T]: JsFunction<T[N]> };

export type RuntimeSymbols = Callable<typeof SYMBOLS>;

/** An opened library: its functions, and `close()` for a probe opened only to be dropped. */
export interface OpenLibrary<T extends Record<string, SymbolSpec>> {
  readonly symbols: Callable<T>;
  close(): void;
}

/** What each runtime's binding provides: dlopen over the neutral table, and a buffer's address. */
export interface FfiBinding {
  /** `bun` or `deno`, for messages and benchmarks. */
  readonly runtime: 'bun' | 'deno';
  open<T extends Record<string, SymbolSpec>>(path: string, symbols: T): OpenLibrary<T>;
  /** The address of a buffer's first byte, to be stored in a C struct (it must stay referenced). */
  addressOf(bytes: Uint8Array): bigint;
}
