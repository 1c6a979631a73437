import { defineConfig } from 'tsup';

export default defineConfig({
  entry: {
    bin: 'src/bin.ts',
    index: 'src/index.ts',
    'fake-graph-api': 'src/testing/fake-graph-api-cli.ts',
    // The fake as a library, for the end-to-end suites of the clients (packages/e2e).
    testing: 'src/testing/fake-graph-api.ts',
  },
  format: ['esm'],
  clean: true,
  sourcemap: true,
  target: 'node20',
});
