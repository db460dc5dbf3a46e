/**
 * Headless Chromium for the page tests, driven by puppeteer-core over the Debian browser. The
 * browser is put on the machine by scripts/ensure-chromium.mjs (also run by `pretest`), called here
 * too so a single test file run alone does the same set-up; a machine where that cannot happen
 * fails the test with what to install, never skips it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { until } from '../../src/sim/cluster/process.ts';

const ROOT = join(import.meta.dir, '..', '..');
/** Screenshots the tests save; git-ignored. */
export const ARTIFACTS = join(ROOT, 'test', 'artifacts');

function chromiumPath(): string {
  const ensure = spawnSync('node', [join(ROOT, 'scripts', 'ensure-chromium.mjs')], { encoding: 'utf8' });
  if (ensure.status !== 0)
    throw new Error(ensure.stderr.trim() || 'scripts/ensure-chromium.mjs failed: install the Debian package `chromium`');
  const named = process.env['PDLINK_CHROMIUM'];
  const path = [named, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find(
    (p) => p !== undefined && p !== '' && existsSync(p),
  );
  if (path === undefined) throw new Error('no Chromium found: install the Debian package `chromium` (apt-get install -y chromium)');
  return path;
}

/**
 * Launches headless Chromium.
 * @example const browser = await launchBrowser(); const page = await browser.newPage();
 */
export function launchBrowser(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Root in a container has no user namespace for the sandbox; /dev/shm may be tiny.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--window-size=1400,1000'],
    defaultViewport: { width: 1400, height: 1000 },
  });
}

/**
 * Polls the page until `read` (run in the page) returns a value `ok` accepts; bounded, no sleeps.
 * @example await pageUntil(page, () => document.querySelectorAll('tr').length, (n) => n > 3);
 */
export async function pageUntil<T>(
  page: Page,
  read: () => T,
  ok: (value: T) => boolean,
  deadlineMs = 20_000,
  what = 'page condition',
): Promise<T> {
  let last: T | undefined;
  return until(
    async () => {
      last = (await page.evaluate(read)) as T;
      return ok(last) ? last : undefined;
    },
    deadlineMs,
    () => `${what}: last saw ${JSON.stringify(last)}`,
  );
}

/** Saves a full-page screenshot under test/artifacts/ and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
