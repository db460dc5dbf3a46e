/**
 * The platform pdlink runs on (Bun or Deno), picked once when this module loads: Deno's seam when the `Deno`
 * global is there, Bun's otherwise. The rest of pdlink imports only this module, so it stays
 * platform-neutral TypeScript. ("Runtime" in pdlink means the device runtime alone: native/, src/ffi/,
 * PDLINK_RUNTIME.)
 */
import { bunPlatform } from './bun.ts';
import { denoGlobal } from './deno-api.ts';
import { denoPlatform } from './deno.ts';
import type { Platform } from './platform.ts';

export type { PostRoute, PostRoutes, Platform, ServeEnv, ServeHandler, ServeSpec, Served } from './platform.ts';

/** The seam of the platform this process runs on. */
export const platform: Platform = denoGlobal() === undefined ? bunPlatform : denoPlatform;
