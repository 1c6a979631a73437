import type { OpenApiDocument } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { defaultSettings } from '../settings.js';
import { META_HOOKS_PATH } from './routes.js';
import { buildServer } from './server.js';

describe('OpenAPI drift', () => {
  it.each([true, false])(
    'documents exactly the routes the server registers (sandbox on: %s)',
    async (sandboxEnabled) => {
      const database = openDatabase('file::memory:');
      const app = await buildServer({ database, settings: defaultSettings({ sandboxEnabled }) });
      await app.ready();
      const served = (await app.inject({ method: 'GET', url: '/v1/openapi.json' })).json() as OpenApiDocument;
      const documented = Object.entries(served.paths).flatMap(([path, methods]) =>
        Object.keys(methods).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
      );
      // The document need not list itself (CONTRACT: Documentation).
      const routes = [
        ...app.apiRoutes.filter((route) => route !== 'GET /v1/openapi.json'),
        `GET ${META_HOOKS_PATH}`,
        `POST ${META_HOOKS_PATH}`,
      ];
      expect(routes.sort()).toEqual(documented.sort());
      expect(routes.includes('POST /v1/sandbox/inbound')).toBe(sandboxEnabled);
      await app.close();
      await database.destroy();
    },
  );
});
