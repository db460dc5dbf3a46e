/**
 * Loading the device runtime library: its path, the ABI check, and one opened library per path
 * and thread, through the binding of the runtime this process runs on (symbols.ts has the table).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { errors } from '../core/errors.ts';
import { binding } from './binding.ts';
import { CALL_SYMBOLS, LIBC_SYMBOLS, SYMBOLS, type Callable, type OpenLibrary, type RuntimeSymbols } from './symbols.ts';

/** PDRT_ABI_VERSION of the header this binding was written against. */
export const PDRT_ABI_VERSION = 2;

export type RuntimeLibrary = OpenLibrary<typeof SYMBOLS>;
export type { RuntimeSymbols };

/** The reference runtime built by `make -C native`, relative to this repository. */
export const DEFAULT_RUNTIME_PATH = fileURLToPath(new URL('../../native/build/libpdrt.so', import.meta.url));

/**
 * Path of the runtime library: `PDLINK_RUNTIME` when set, else the reference runtime.
 * @example runtimeLibraryPath({ PDLINK_RUNTIME: '/opt/npu/libpdrt.so' }) // '/opt/npu/libpdrt.so'
 */
export function runtimeLibraryPath(env: Record<string, string | undefined> = process.env): string {
  const configured = env['PDLINK_RUNTIME'];
  return configured !== undefined && configured !== '' ? resolve(configured) : DEFAULT_RUNTIME_PATH;
}

const loaded = new Map<string, RuntimeLibrary>();

/**
 * Loads (once per path and thread) the runtime library after checking its ABI version.
 * @example const { symbols } = loadRuntime(); symbols.pdrt_abi_version() // 1
 */
export function loadRuntime(path: string = runtimeLibraryPath()): RuntimeLibrary {
  const cached = loaded.get(path);
  if (cached !== undefined) return cached;
  if (!existsSync(path)) {
    throw errors.runtimeLoadFailed(path, 'no such file (build it with `make -C native`, or set PDLINK_RUNTIME)');
  }
  // Only the version symbol first: a library of another ABI may lack the others, and the version
  // mismatch is the error worth reporting.
  let version: number;
  try {
    const probe = binding.open(path, { pdrt_abi_version: SYMBOLS.pdrt_abi_version });
    version = probe.symbols.pdrt_abi_version();
    probe.close();
  } catch (cause) {
    throw errors.runtimeLoadFailed(path, `cannot load it or find pdrt_abi_version: ${String(cause)}`, cause);
  }
  if (version !== PDRT_ABI_VERSION) {
    throw errors.runtimeLoadFailed(path, `ABI version ${version}, but pdlink needs ABI version ${PDRT_ABI_VERSION}`);
  }
  let library: RuntimeLibrary;
  try {
    library = binding.open(path, SYMBOLS);
  } catch (cause) {
    throw errors.runtimeLoadFailed(path, `missing pdrt symbols: ${String(cause)}`, cause);
  }
  pinLibrary(path);
  loaded.set(path, library);
  return library;
}

/** glibc's RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE: take one more reference, never unmap, load nothing new. */
const PIN_FLAGS = 0x1 | 0x4 | 0x1000;

/**
 * Makes a loaded runtime library impossible to unmap for the rest of the process. A runtime runs
 * threads of its own (its I/O thread, its call queue) that outlive any call; Deno closes the
 * libraries a program opened when the program ends (and when a worker ends), and a thread still
 * inside the unmapped code then crashes the process (a SIGSEGV at exit). The reference runtime is
 * linked with `-z nodelete` for the same reason; this covers a runtime built without it. Best
 * effort: where libc's dlopen cannot be reached, the library's own flags decide.
 * @example pinLibrary('/opt/npu/libpdrt.so') // true
 */
export function pinLibrary(path: string): boolean {
  try {
    const libc = binding.open('libc.so.6', LIBC_SYMBOLS);
    const name = new TextEncoder().encode(`${path}\0`);
    // libc stays open: closing it would only drop a reference to a library that never unloads.
    return BigInt(libc.symbols.dlopen(name, PIN_FLAGS)) !== 0n;
  } catch {
    return false;
  }
}

let current: RuntimeSymbols | undefined;

/**
 * Symbols of the runtime at `runtimeLibraryPath()`, loaded on first use in this thread.
 * @example runtimeSymbols().pdrt_abi_version()
 */
export function runtimeSymbols(): RuntimeSymbols {
  current ??= loadRuntime().symbols;
  return current;
}

export type CallQueueSymbols = Callable<typeof CALL_SYMBOLS>;

const callQueues = new Map<string, CallQueueSymbols | null>();

/**
 * The call queue's symbols of the runtime at `path` (loaded as `loadRuntime` does), or undefined
 * when that runtime leaves this optional part of pdrt.h out.
 * @example const calls = loadCallQueue(); if (calls === undefined) useWorkerThreads();
 */
export function loadCallQueue(path: string = runtimeLibraryPath()): CallQueueSymbols | undefined {
  const cached = callQueues.get(path);
  if (cached !== undefined) return cached ?? undefined;
  loadRuntime(path);
  let symbols: CallQueueSymbols | null;
  try {
    symbols = binding.open(path, CALL_SYMBOLS).symbols;
  } catch {
    symbols = null;
  }
  callQueues.set(path, symbols);
  return symbols ?? undefined;
}
