import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

// The API server serves dist/ at /console/ under a strict CSP: no inline scripts or styles,
// so the build emits only files (modulePreload's polyfill is an inline-free module too).
/** The API server the dev server proxies to (`pnpm start`'s default address). */
const API_SERVER = 'http://127.0.0.1:3000';
/** The origin the API server takes as the console's: its CONVO_PUBLIC_URL, set the same for both. */
const API_PUBLIC_ORIGIN = new URL(process.env.CONVO_PUBLIC_URL || API_SERVER).origin;

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
      '/console/trpc': {
        target: API_SERVER,
        changeOrigin: true,
        configure: (proxy) => {
          // The server accepts state-changing calls only from its public URL's origin: present the
          // dev server's own pages as that origin, and leave any other page's Origin as it is, so
          // that a cross-site call is refused here as it would be in production. Vite has checked
          // the Host against server.allowedHosts before the proxy runs.
          proxy.on('proxyReq', (proxyRequest, request) => {
            const devOrigin = `${'encrypted' in request.socket ? 'https' : 'http'}://${request.headers.host}`;
            if (request.headers.origin === devOrigin) proxyRequest.setHeader('origin', API_PUBLIC_ORIGIN);
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
