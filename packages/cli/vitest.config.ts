import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Commands run in-process against local servers. CI runs every package's suite side by side on two cores,
    // where a command that first imports the SDK and talks to three servers takes seconds, not vitest's 5.
    testTimeout: 30_000,
  },
});
