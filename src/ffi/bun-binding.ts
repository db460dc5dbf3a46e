/**
 * The symbol table opened with `bun:ffi`: Bun passes a number to a `ptr` argument as the address
 * and a typed array as its data, so a context handle and a buffer both map to `ptr` as they are.
 * Loaded only on Bun (see binding.ts): no other runtime can resolve `bun:ffi`.
 */
import { dlopen, JSCallback, ptr, type FFIFunction } from 'bun:ffi';
import {
  INTEGER_TYPES,
  type Callable,
  type FfiBinding,
  type NativeCallback,
  type NativeType,
  type OpenLibrary,
  type SymbolSpec,
} from './symbols.ts';

const BUN_TYPE = { ctx: 'ptr', buf: 'ptr', fn: 'function', ...INTEGER_TYPES } as const satisfies Record<NativeType, string>;

function open<T extends Record<string, SymbolSpec>>(path: string, symbols: T): OpenLibrary<T> {
  const table: Record<string, FFIFunction> = {};
  for (const [name, spec] of Object.entries(symbols)) {
    table[name] = { args: spec.args.map((t) => BUN_TYPE[t]), returns: BUN_TYPE[spec.returns] } as FFIFunction;
  }
  const library = dlopen(path, table);
  return { symbols: library.symbols as unknown as Callable<T>, close: () => library.close() };
}

/**
 * A JSCallback registered as thread-safe: a call from another thread is queued on this thread's
 * event loop. Such a callback does not keep the loop alive, so `ref` holds an idle timer instead.
 */
function callback(arity: number, call: (...args: number[]) => void): NativeCallback {
  const native = new JSCallback(call, { args: Array.from({ length: arity }, () => 'u32' as const), returns: 'void', threadsafe: true });
  let refs = 0;
  const keepAlive = setInterval(() => {}, 0x7fffffff);
  keepAlive.unref();
  return {
    pointer: native,
    holdsCaller: false,
    ref() {
      if (refs++ === 0) keepAlive.ref();
    },
    unref() {
      if (refs > 0 && --refs === 0) keepAlive.unref();
    },
    close() {
      clearInterval(keepAlive);
      native.close();
    },
  };
}

export const bunBinding: FfiBinding = {
  platform: 'bun',
  open,
  addressOf: (bytes) => BigInt(ptr(bytes)),
  callback,
};
