/**
 * The runtime pdlink runs on, picked once when this module loads: Deno's seam when the `Deno`
 * global is there, Bun's otherwise. The rest of pdlink imports only this module, so it stays
 * runtime-neutral TypeScript.
 */
import { bunRuntime } from './bun.ts';
import { denoGlobal } from './deno-api.ts';
import { denoRuntime } from './deno.ts';
import type { Runtime } from './runtime.ts';

export type { PostRoute, PostRoutes, Runtime, ServeEnv, ServeHandler, ServeSpec, Served } from './runtime.ts';

/** The seam of the runtime this process runs on. */
export const runtime: Runtime = denoGlobal() === undefined ? bunRuntime : denoRuntime;
