/**
 * The one symbol table of the device runtime (native/include/pdrt.h), written once in neutral type
 * names that each runtime's binding maps to its own FFI types, so Bun and Deno call the same C
 * functions with the same arguments. Every status-returning function is declared `i32`; ids are
 * `u64` (bigint); `ctx` is an opaque handle (a pdrt_ctx or a pdrt_calls), carried as a number;
 * `buf` a caller buffer; `fn` a C function pointer made by the binding's `callback`.
 */

/** Neutral argument types: `ctx` is an opaque handle (a number), `buf` a typed array (or null), `fn` a NativeCallback's pointer. */
export type NativeType = 'ctx' | 'buf' | 'fn' | 'i32' | 'u16' | 'u32' | 'i64' | 'u64';

/** The fixed-width integer types, which both runtimes' FFIs spell as the neutral table does. */
export const INTEGER_TYPES = { i32: 'i32', u16: 'u16', u32: 'u32', i64: 'i64', u64: 'u64' } as const;

export interface SymbolSpec {
  readonly args: readonly NativeType[];
  /** `i32` for every pdrt function; `u64` only for a pointer that is compared with null (libc's dlopen). */
  readonly returns: 'i32' | 'u64';
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

/**
 * libc's dlopen, to pin a loaded library (see library.ts `pinLibrary`); `buf` is the path as a
 * NUL-terminated string, the result the handle (0 when the library is not loaded).
 */
export const LIBC_SYMBOLS = {
  dlopen: { args: ['buf', 'i32'], returns: 'u64' },
} as const satisfies Record<string, SymbolSpec>;

/**
 * The call queue of pdrt.h, an optional part of the ABI: looked up apart from SYMBOLS, so a
 * runtime without it still loads (pdlink then makes link calls on worker threads).
 */
export const CALL_SYMBOLS = {
  pdrt_calls_create: { args: ['u32', 'buf', 'u32', 'fn', 'buf'], returns: 'i32' },
  pdrt_calls_submit: { args: ['ctx', 'u32'], returns: 'i32' },
  pdrt_calls_destroy: { args: ['ctx'], returns: 'i32' },
} as const satisfies Record<string, SymbolSpec>;

type JsArg<T extends NativeType> = T extends 'ctx'
  ? number
  : T extends 'buf'
    ? ArrayBufferView | null
    : T extends 'fn'
      ? NativeCallback['pointer']
      : T extends 'i64' | 'u64'
        ? bigint | number
        : number;

type JsArgs<A extends readonly NativeType[]> = { -readonly [K in keyof A]: JsArg<A[K]> };

type JsFunction<S extends SymbolSpec> = (...args: JsArgs<S['args']>) => S['returns'] extends 'u64' ? bigint | number : number;

/** A symbol table as callable functions, whichever runtime opened it. */
export type Callable<T extends Record<string, SymbolSpec>> = { readonly [N in keyof T]: JsFunction<T[N]> };

export type RuntimeSymbols = Callable<typeof SYMBOLS>;

/** An opened library: its functions, and `close()` for a probe opened only to be dropped. */
export interface OpenLibrary<T extends Record<string, SymbolSpec>> {
  readonly symbols: Callable<T>;
  close(): void;
}

/**
 * A C function pointer that runs a JavaScript function on the event loop of the thread that made it,
 * whichever thread calls it. While not referenced (the default), it does not keep the process alive.
 */
export interface NativeCallback {
  /** What a `fn` argument takes. */
  readonly pointer: unknown;
  /**
   * True when a call from another thread waits until the JavaScript function has run (Deno's):
   * that thread is then not free before the callback's turn of the event loop has ended.
   */
  readonly holdsCaller: boolean;
  /** Keeps the process alive until `unref` (counted: one `unref` per `ref`). */
  ref(): void;
  unref(): void;
  /** Frees the function pointer; no thread may call it afterwards. */
  close(): void;
}

/** What each platform's binding (Bun's or Deno's FFI) provides: dlopen over the neutral table, and a buffer's address. */
export interface FfiBinding {
  /** `bun` or `deno`, for messages and benchmarks. */
  readonly platform: 'bun' | 'deno';
  open<T extends Record<string, SymbolSpec>>(path: string, symbols: T): OpenLibrary<T>;
  /** The address of a buffer's first byte, to be stored in a C struct (it must stay referenced). */
  addressOf(bytes: Uint8Array): bigint;
  /** A thread-safe callback taking 32-bit unsigned integers, returning nothing. */
  callback(arity: number, call: (...args: number[]) => void): NativeCallback;
}
