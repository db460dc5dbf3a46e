/**
 * The symbol table opened with `Deno.dlopen`. Deno takes a typed array for a `buffer` argument but
 * only a pointer object for a `pointer` one, so a context handle (a number, shared across worker
 * threads as such) becomes a pointer object at the call; those objects are kept per handle, since
 * a link storm calls with the same few handles all the time. Loaded only on Deno (see binding.ts).
 */
import {
  INTEGER_TYPES,
  type Callable,
  type FfiBinding,
  type NativeCallback,
  type NativeType,
  type OpenLibrary,
  type SymbolSpec,
} from './symbols.ts';

/** The part of Deno's FFI that pdlink uses; Deno's own types are not in this project's type check. */
interface DenoFfi {
  dlopen(
    path: string,
    symbols: Record<string, { parameters: string[]; result: string }>,
  ): { symbols: Record<string, (...args: unknown[]) => number>; close(): void };
  UnsafeCallback: {
    threadSafe(
      definition: { parameters: string[]; result: string },
      call: (...args: number[]) => void,
    ): { pointer: object; ref(): number; unref(): number; close(): void };
  };
  UnsafePointer: {
    create(value: bigint): object | null;
    of(value: ArrayBufferView): object | null;
    value(pointer: object | null): bigint;
  };
}

const DENO_TYPE = { ctx: 'pointer', buf: 'buffer', fn: 'function', ...INTEGER_TYPES } as const satisfies Record<NativeType, string>;

const deno = (globalThis as unknown as { Deno: DenoFfi }).Deno;

/** Handles seen lately; cleared when it grows, since a handle's pointer object is cheap to make again. */
const pointers = new Map<number, object | null>();
const POINTER_CACHE = 1024;

function pointerOf(handle: number): object | null {
  let pointer = pointers.get(handle);
  if (pointer === undefined) {
    if (pointers.size >= POINTER_CACHE) pointers.clear();
    pointer = deno.UnsafePointer.create(BigInt(handle));
    pointers.set(handle, pointer);
  }
  return pointer;
}

/** Every `ctx` of the table is the first argument; a function taking one gets it converted. */
function withHandle(call: (...args: unknown[]) => number): (...args: unknown[]) => number {
  return (handle, ...rest) => call(pointerOf(handle as number), ...rest);
}

function open<T extends Record<string, SymbolSpec>>(path: string, symbols: T): OpenLibrary<T> {
  const table: Record<string, { parameters: string[]; result: string }> = {};
  for (const [name, spec] of Object.entries(symbols)) {
    if (spec.args.indexOf('ctx') > 0) throw new TypeError(`${name}: a context handle must be the first argument`);
    table[name] = { parameters: spec.args.map((t) => DENO_TYPE[t]), result: DENO_TYPE[spec.returns] };
  }
  const library = deno.dlopen(path, table);
  const out: Record<string, (...args: unknown[]) => number> = {};
  for (const [name, spec] of Object.entries(symbols)) {
    const call = library.symbols[name]!;
    out[name] = spec.args[0] === 'ctx' ? withHandle(call) : call;
  }
  return { symbols: out as unknown as Callable<T>, close: () => library.close() };
}

/**
 * Deno's thread-safe callback, which wakes the event loop from any thread. It starts referenced
 * once; that reference is dropped so an idle callback does not keep the process alive.
 */
function callback(arity: number, call: (...args: number[]) => void): NativeCallback {
  const native = deno.UnsafeCallback.threadSafe({ parameters: Array.from({ length: arity }, () => 'u32'), result: 'void' }, call);
  native.unref();
  return {
    pointer: native.pointer,
    holdsCaller: true,
    ref: () => void native.ref(),
    unref: () => void native.unref(),
    close: () => native.close(),
  };
}

export const denoBinding: FfiBinding = {
  platform: 'deno',
  open,
  addressOf: (bytes) => deno.UnsafePointer.value(deno.UnsafePointer.of(bytes)),
  callback,
};
