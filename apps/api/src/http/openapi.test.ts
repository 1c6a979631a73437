import { buildOpenApiDocument } from '@convo/core';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database.js';
import { buildServer } from './server.js';

describe('OpenAPI drift', () => {
  it('documents exactly the /v1 routes the server registers', async () => {
    const database = openDatabase('file::memory:');
    const app = await buildServer({ database });
    await app.ready();
    const documented = Object.entries(buildOpenApiDocument().paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    // The document need not list itself (CONTRACT: Documentation).
    const served = app.apiRoutes.filter((route) => route !== 'GET /v1/openapi.json');
    expect(served.sort()).toEqual(documented.sort());
    await app.close();
    await database.destroy();
  });
});
