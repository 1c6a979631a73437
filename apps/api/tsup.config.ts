import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { bin: 'src/bin.ts', index: 'src/index.ts', 'fake-graph-api': 'src/testing/fake-graph-api-cli.ts' },
  format: ['esm'],
  clean: true,
  sourcemap: true,
  target: 'node20',
});
