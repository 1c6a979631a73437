import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

// The API server serves dist/ at /console/ under a strict CSP: no inline scripts or styles,
// so the build emits only files (modulePreload's polyfill is an inline-free module too).
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    // One chunk for a small internal app: React, React Aria, zod and the contract schemas.
    chunkSizeWarningLimit: 800,
  },
  server: {
    proxy: {
      // The server refuses state-changing calls from another origin: present the dev server's calls as its own.
      '/console/trpc': {
        target: 'http://127.0.0.1:3000',
        changeOrigin: true,
        configure: (proxy) => {
          proxy.on('proxyReq', (request) => {
            if (request.getHeader('origin')) request.setHeader('origin', 'http://127.0.0.1:3000');
          });
        },
      },
    },
  },
  test: {
    environment: 'jsdom',
    include: ['src/**/*.test.tsx', 'src/**/*.test.ts'],
    setupFiles: ['src/testing/setup.ts'],
    // Typing through user-event in jsdom takes seconds when the whole suite runs beside it.
    testTimeout: 30_000,
  },
});
