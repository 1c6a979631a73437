import { configDefaults, defineConfig } from 'vitest/config';
import { findPgBouncer } from './src/resilience/pgbouncer.js';

/**
 * The resilience suite: real `convo-server` processes, a redis-server and a throwaway Postgres
 * cluster of its own, killed and restarted under load (the fleet drill behind HAProxy among them,
 * which skips or fails without haproxy as below for pgbouncer); then the HTTP suite on Postgres reached
 * through a PgBouncer pooling per transaction. Run with `pnpm test:resilience`, one of them with
 * `--project resilience` or `--project pgbouncer`.
 */

// Outside CI a machine without pgbouncer skips its project with a warning; under CI=true the
// project's global setup fails the run.
const withPgBouncer = process.env.CI === 'true' || findPgBouncer() !== undefined;
if (!withPgBouncer) console.warn('pgbouncer is not installed: the HTTP suite through PgBouncer is skipped');

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'resilience',
          include: ['src/resilience/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'src/resilience/pgbouncer.test.ts'],
          // Timing assertions (answers within seconds, recovery within seconds) want a quiet machine.
          maxWorkers: 1,
          sequence: { groupOrder: 0 },
        },
      },
      ...(withPgBouncer
        ? [
            {
              extends: true as const,
              test: {
                name: 'pgbouncer',
                include: ['src/http/*.test.ts', 'src/resilience/pgbouncer.test.ts'],
                // The /docs page never touches the database.
                exclude: [...configDefaults.exclude, 'src/http/docs-page*.test.ts'],
                globalSetup: ['src/resilience/pgbouncer.ts'],
                runner: 'src/resilience/through-pgbouncer.ts',
                maxWorkers: 2,
                // After the timed suite, never beside it.
                sequence: { groupOrder: 1 },
              },
            },
          ]
        : []),
    ],
  },
});
