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

  it('takes the public URL from CONVO_PUBLIC_URL, else from where the server listens', () => {
    expect(readEnv({}).publicUrl).toBe('http://127.0.0.1:3000');
    expect(readEnv({ PORT: '4100', HOST: 'api.local' }).publicUrl).toBe('http://api.local:4100');
    expect(readEnv({ HOST: '0.0.0.0', PORT: '8080' }).publicUrl).toBe('http://localhost:8080');
    expect(readEnv({ HOST: '::1' }).publicUrl).toBe('http://[::1]:3000');
    expect(readEnv({ CONVO_PUBLIC_URL: 'https://api.example.com/v1/', PORT: '8080' }).publicUrl).toBe('https://api.example.com');
    for (const value of ['api.example.com', 'ftp://api.example.com']) {
      expect(() => readEnv({ CONVO_PUBLIC_URL: value })).toThrow(`CONVO_PUBLIC_URL must be an http(s) URL, got "${value}"`);
    }
  });
});
