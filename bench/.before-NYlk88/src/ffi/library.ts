/**
 * The one dlopen table of the device runtime (native/include/pdrt.h), its path, and the ABI check.
 * Every status-returning function is declared `i32`; ids are `u64` (bigint), buffers `ptr`.
 */
import { dlopen, FFIType, type Library } from 'bun:ffi';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { errors } from '../core/errors.ts';

/** PDRT_ABI_VERSION of the header this binding was written against. */
export const PDRT_ABI_VERSION = 2;

const { i32, i64, u16, u32, u64, ptr } = FFIType;

const SYMBOLS = {
  pdrt_abi_version: { args: [], returns: i32 },
  pdrt_create: { args: [u64, u32, ptr, u16, ptr, ptr], returns: i32 },
  pdrt_listen_port: { args: [ptr, ptr], returns: i32 },
  pdrt_destroy: { args: [ptr], returns: i32 },
  pdrt_set_option: { args: [ptr, u32, i64], returns: i32 },
  pdrt_link: { args: [ptr, ptr, u32, i32, ptr], returns: i32 },
  pdrt_unlink: { args: [ptr, ptr, u32, i32, i32, ptr], returns: i32 },
  pdrt_poll_events: { args: [ptr, ptr, u32, ptr], returns: i32 },
  pdrt_wait_events: { args: [ptr, i32], returns: i32 },
  pdrt_list_links: { args: [ptr, ptr, u32, ptr, ptr], returns: i32 },
  pdrt_register_blocks: { args: [ptr, u64, u32, u32], returns: i32 },
  pdrt_unregister_blocks: { args: [ptr, u64], returns: i32 },
  pdrt_write_blocks: { args: [ptr, u64, ptr, u32, ptr, u64], returns: i32 },
  pdrt_read_blocks: { args: [ptr, u64, ptr, u32, ptr, u64], returns: i32 },
  pdrt_pull_blocks: { args: [ptr, u64, u64, ptr, u64, ptr, u32, i32], returns: i32 },
  pdrt_push_blocks: { args: [ptr, u64, u64, ptr, u64, ptr, u32, i32], returns: i32 },
} as const;

export type RuntimeLibrary = Library<typeof SYMBOLS>;
export type RuntimeSymbols = RuntimeLibrary['symbols'];

/** The reference runtime built by `make -C native`, relative to this repository. */
export const DEFAULT_RUNTIME_PATH = join(import.meta.dir, '..', '..', 'native', 'build', 'libpdrt.so');

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
    const probe = dlopen(path, { pdrt_abi_version: SYMBOLS.pdrt_abi_version });
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
    library = dlopen(path, SYMBOLS);
  } catch (cause) {
    throw errors.runtimeLoadFailed(path, `missing pdrt symbols: ${String(cause)}`, cause);
  }
  loaded.set(path, library);
  return library;
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
