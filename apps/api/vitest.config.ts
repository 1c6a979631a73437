import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Real processes killed and restarted: their own run, `test:resilience` (vitest.resilience.config.ts).
    exclude: [...configDefaults.exclude, 'src/resilience/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file starts its own servers and databases; two workers suit the 2-core machines.
    maxWorkers: 2,
  },
});
