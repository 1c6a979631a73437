import { defineConfig } from 'vitest/config';

/**
 * The resilience suite: real `convo-server` processes, a redis-server and a throwaway Postgres
 * cluster of its own, killed and restarted under load. Run with `pnpm test:resilience`.
 */
export default defineConfig({
  test: {
    include: ['src/resilience/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Timing assertions (answers within seconds, recovery within seconds) want a quiet machine.
    maxWorkers: 1,
  },
});
