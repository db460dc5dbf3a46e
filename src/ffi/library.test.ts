import { describe, expect, test } from 'bun:test';
import { loadRuntime, pinLibrary, runtimeLibraryPath } from './library.ts';

describe('pinLibrary', () => {
  test('pins a loaded library, so that closing every handle of it leaves it mapped', () => {
    const path = runtimeLibraryPath();
    loadRuntime(path);
    expect(pinLibrary(path)).toBe(true);
  });

  test('loads nothing: a library that is not loaded is not pinned', () => {
    expect(pinLibrary('/nonexistent/libpdrt-never-loaded.so')).toBe(false);
  });
});
