/**
 * pdlink as a plugin of a Deno gateway: the Deno block of docs/plugin.md, run as written (only its
 * port made 0 and its two `npm:` imports pointed at this checkout), serves the refresh and a
 * completion that its proxy sends to a prefill and a decode engine simulator.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { refreshBody } from '../../src/sim/cluster/cluster-bodies.ts';
import { blockAsModule, docBlock } from '../support/docs.ts';
import { completion, denoCluster, REPO_ROOT } from './support.ts';

interface DocsGateway {
  readonly pdlink: { readonly registry: { all(): { id: number }[] } };
  readonly server: { readonly addr: { readonly port: number } };
  onShutdown(): Promise<void>;
}

/** The docs' block as a module: what runs before `// on shutdown` at import, the rest as `onShutdown()`. */
async function loadDocsGateway(dir: string): Promise<DocsGateway> {
  const source = blockAsModule(
    docBlock('docs/plugin.md', 'deno-gateway'),
    ['pdlink', 'server'],
    [
      ["from 'npm:pdlink'", `from '${pathToFileURL(join(REPO_ROOT, 'src', 'index.ts')).href}'`],
      ["from 'npm:hono'", `from '${import.meta.resolve('hono')}'`],
      ['port: 8080', 'port: 0'],
    ],
  );
  const path = join(dir, 'gateway.ts');
  writeFileSync(path, source);
  return (await import(pathToFileURL(path).href)) as DocsGateway;
}

Deno.test('the Deno gateway of docs/plugin.md serves the refresh and a proxied completion', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pdlink-deno-gateway-'));
  const cluster = await denoCluster();
  const gateway = await loadDocsGateway(dir);
  try {
    const base = `http://127.0.0.1:${gateway.server.addr.port}`;
    assert.equal(await fetch(`${base}/pd/v1/readiness`).then((r) => r.text().then(() => r.status)), 503);

    const entries = cluster.engines.map((engine) => ({
      engine,
      inferencePort: Number(new URL(engine.inferenceUrl).port),
      managementPort: Number(new URL(engine.manageUrl).port),
    }));
    const body = JSON.stringify(refreshBody(entries, cluster.model, cluster.settings));
    const refreshed = await fetch(`${base}/pd/v1/instances/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    assert.equal(refreshed.status, 200);
    assert.equal(await refreshed.text(), '');
    assert.deepEqual(
      gateway.pdlink.registry
        .all()
        .map((i) => i.id)
        .sort(),
      [100, 200],
    );
    assert.equal(await fetch(`${base}/pd/v1/readiness`).then((r) => r.text().then(() => r.status)), 200);

    const res = await fetch(`${base}/v1/completions`, completion('a Deno gateway in front of PD'));
    const answer = (await res.json()) as { choices: { text: string }[] };
    assert.equal(res.status, 200, JSON.stringify(answer));
    assert.ok(answer.choices[0]!.text.length > 0);
    const requestId = res.headers.get('x-request-id')!;
    // Both legs reached their engine: P for the prefill, D for the tokens.
    assert.equal((await cluster.requests('p0', requestId)).length, 1);
    assert.equal((await cluster.requests('d0', requestId)).length, 1);
  } finally {
    await gateway.onShutdown();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
