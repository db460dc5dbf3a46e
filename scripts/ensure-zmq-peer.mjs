#!/usr/bin/env node
/**
 * The KV-event tests talk to a real libzmq peer: Debian's Python bindings of libzmq (`python3-zmq`)
 * publishing msgpack batches (`python3-msgpack`) whose block hashes are cross-checked with the
 * reference xxHash (`python3-xxhash`). This makes sure Debian's own Python 3 can import all three,
 * installing the packages when it can; run by `npm test`'s pretest and by the test helper that starts
 * the peer, so a fresh machine needs no other step.
 */
import { ensureDebianPackage, shellSucceeds } from './debian-package.mjs';

/** Debian's interpreter, which the python3-* packages install into (not a pyenv or venv one first on PATH). */
const PYTHON = '/usr/bin/python3';

for (const [pkg, module] of [
  ['python3-zmq', 'zmq'],
  ['python3-msgpack', 'msgpack'],
  ['python3-xxhash', 'xxhash'],
]) {
  ensureDebianPackage({
    pkg,
    binary: `${PYTHON} -c 'import ${module}'`,
    found: () => shellSucceeds(`${PYTHON} -c 'import ${module}'`),
    neededBy: 'the KV-event tests',
  });
}
