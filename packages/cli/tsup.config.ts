import { endpoints } from '@convo/core';
import { defineConfig } from 'tsup';
import { describeOperations } from './src/operation-spec.js';

export default defineConfig({
  entry: ['src/bin.ts'],
  format: ['esm'],
  clean: true,
  sourcemap: true,
  target: 'node20',
  banner: { js: '#!/usr/bin/env node' },
  // The options and help of every operation command, computed here from the contract's zod
  // schemas and inlined as data, so that start-up (`convo --help`) never loads zod.
  define: { __CONVO_OPERATION_SPECS__: JSON.stringify(describeOperations(endpoints)) },
});
