/**
 * The load generator, run as its own process (so it never shares an event loop or a core's
 * time slice with the harness or the server): autocannon's engine, configured by a JSON file,
 * printing autocannon's JSON result (what `autocannon --json` prints) on stdout.
 *
 * It uses autocannon's programmatic API rather than its CLI for one thing the CLI cannot do:
 * rotating each request over a list of paths and bodies (GET by id over 1,000 ids, POST over
 * 1,000 conversations), so that the scenarios neither hit one cached row nor queue on one row lock.
 *
 *   node --import tsx src/load.ts config.json
 */
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';

export interface LoadConfig {
  url: string;
  connections: number;
  /** Seconds. */
  duration: number;
  /** Seconds before a request counts as timed out. */
  timeout: number;
  method: 'GET' | 'POST';
  paths: string[];
  bodies?: string[];
  headers: Record<string, string>;
}

const config = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as LoadConfig;
let next = 0;
const rotate: autocannon.Request = {
  method: config.method,
  path: config.paths[0] as string,
  setupRequest: (request) => {
    const i = next++;
    return {
      ...request,
      path: config.paths[i % config.paths.length] as string,
      ...(config.bodies ? { body: config.bodies[i % config.bodies.length] as string } : {}),
    };
  },
};

// One path and no bodies: autocannon's fixed request, which it encodes once, where a setupRequest
// has it build every request anew (CPU the load generator takes from the servers' two cores).
const fixed = config.paths.length === 1 && !config.bodies;

const instance = autocannon(
  {
    url: fixed ? `${config.url}${config.paths[0] as string}` : config.url,
    method: config.method,
    connections: config.connections,
    duration: config.duration,
    timeout: config.timeout,
    headers: config.headers,
    ...(fixed ? {} : { requests: [rotate] }),
  },
  (error, result) => {
    if (error) {
      process.stderr.write(`load: ${String(error)}\n`);
      process.exit(1);
    }
    process.stdout.write(`${JSON.stringify(result)}\n`);
  },
);
// The harness measures the server's CPU time from this line on (not over this process's start-up).
process.stdout.write('start\n');
process.once('SIGTERM', () => instance.stop());
