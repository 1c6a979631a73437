import { describe, expect, it } from 'vitest';
import { readEnv } from './env.js';

describe('environment', () => {
  it('reads the Postgres pool size from DATABASE_POOL_SIZE, left to openDatabase when unset', () => {
    expect(readEnv({}).databasePoolSize).toBeUndefined();
    expect(readEnv({ DATABASE_POOL_SIZE: '' }).databasePoolSize).toBeUndefined();
    expect(readEnv({ DATABASE_POOL_SIZE: '4' }).databasePoolSize).toBe(4);
    for (const value of ['0', '-2', '2.5', 'many', '4 connections']) {
      expect(() => readEnv({ DATABASE_POOL_SIZE: value })).toThrow(`DATABASE_POOL_SIZE must be a whole number of connections, 1 or more, got "${value}"`);
    }
  });

  it('refuses a PORT that is not a port number', () => {
    expect(readEnv({ PORT: '8080' }).port).toBe(8080);
    expect(() => readEnv({ PORT: '80000' })).toThrow('PORT must be a port number');
  });
});
