/**
 * The fake agents' own process (fake-agents.ts): `bun fake-agents-main.ts '<options as JSON>'`;
 * prints `fake agents listening on <port>` and serves until killed.
 */
import { FakeAgents, type FakeAgentsOptions } from './fake-agents.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as FakeAgentsOptions;
const agents = FakeAgents.start(options);
console.log(`fake agents listening on ${agents.port}`);
