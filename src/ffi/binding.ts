/**
 * Picks the FFI binding of the runtime this process runs on, once, at load: `Deno.dlopen` when
 * the `Deno` global is there, `bun:ffi` otherwise. The other runtime's module is never imported,
 * so neither needs to resolve the other's built-ins.
 */
import type { FfiBinding } from './symbols.ts';

export const binding: FfiBinding =
  'Deno' in globalThis ? (await import('./deno-binding.ts')).denoBinding : (await import('./bun-binding.ts')).bunBinding;
