import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEnv } from './env.js';

describe('environment', () => {
  it('reads the Postgres pool size from DATABASE_POOL_SIZE, left to openDatabase when unset', () => {
    expect(readEnv({}).databasePoolSize).toBeUndefined();
    expect(readEnv({ DATABASE_POOL_SIZE: '' }).databasePoolSize).toBeUndefined();
    expect(readEnv({ DATABASE_POOL_SIZE: '4' }).databasePoolSize).toBe(4);
    for (const value of ['0', '-2', '2.5', 'many', '4 connections']) {
      expect(() => readEnv({ DATABASE_POOL_SIZE: value })).toThrow(
        `DATABASE_POOL_SIZE must be a whole number of connections, 1 or more, got "${value}"`,
      );
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
    expect(readEnv({ CONVO_PUBLIC_URL: 'https://api.example.com/v1/', PORT: '8080' }).publicUrl).toBe(
      'https://api.example.com',
    );
    for (const value of ['api.example.com', 'ftp://api.example.com']) {
      expect(() => readEnv({ CONVO_PUBLIC_URL: value })).toThrow(
        `CONVO_PUBLIC_URL must be an http(s) URL, got "${value}"`,
      );
    }
  });

  it('takes the secret key from CONVO_SECRET_KEY, requires it in production, and keeps one in the data folder elsewhere', () => {
    const hex = 'ab'.repeat(32);
    expect(readEnv({ CONVO_SECRET_KEY: hex }).settings.secretKey()).toEqual(Buffer.from(hex, 'hex'));
    expect(readEnv({ CONVO_SECRET_KEY: Buffer.alloc(32, 3).toString('base64') }).settings.secretKey()).toEqual(
      Buffer.alloc(32, 3),
    );
    expect(() => readEnv({ CONVO_SECRET_KEY: 'too-short' }).settings.secretKey()).toThrow(
      'CONVO_SECRET_KEY must be 32 bytes',
    );
    // Read when first needed: commands that seal nothing run without it.
    const production = readEnv({ NODE_ENV: 'production' });
    expect(() => production.settings.secretKey()).toThrow('CONVO_SECRET_KEY is required when NODE_ENV=production');

    const dir = mkdtempSync(join(tmpdir(), 'convo-key-'));
    try {
      const url = `file:${join(dir, 'data', 'convo.db')}`;
      const first = readEnv({ DATABASE_URL: url }).settings.secretKey();
      expect(first).toHaveLength(32);
      expect(statSync(join(dir, 'data', 'secret.key')).mode & 0o777).toBe(0o600);
      expect(readEnv({ DATABASE_URL: url }).settings.secretKey()).toEqual(first);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the Graph API address and version, and the channel send settings', () => {
    const env = readEnv({
      CONVO_GRAPH_API_URL: 'http://127.0.0.1:4010/',
      CONVO_GRAPH_API_VERSION: 'v21.0',
      CONVO_CHANNEL_SENDS_PER_SECOND: '5',
      CONVO_CHANNEL_SEND_RETRY_SCHEDULE: '100ms,1s',
    });
    expect(env.settings).toMatchObject({
      graphApiUrl: 'http://127.0.0.1:4010',
      graphApiVersion: 'v21.0',
      channelSendsPerSecond: 5,
      channelSendRetryScheduleMs: [100, 1000],
    });
    expect(readEnv({}).settings).toMatchObject({
      graphApiUrl: 'https://graph.facebook.com',
      channelSendsPerSecond: 80,
    });
    expect(() => readEnv({ CONVO_GRAPH_API_URL: 'graph.facebook.com' })).toThrow(
      'CONVO_GRAPH_API_URL must be an http(s) URL',
    );
    expect(() => readEnv({ CONVO_GRAPH_API_VERSION: '23' })).toThrow('CONVO_GRAPH_API_VERSION must look like v23.0');
    expect(() => readEnv({ CONVO_CHANNEL_SENDS_PER_SECOND: '0' })).toThrow(
      'CONVO_CHANNEL_SENDS_PER_SECOND must be a positive number',
    );
  });

  it('reads the drain period from CONVO_DRAIN_SECONDS: 10 s by default, none for test servers', () => {
    expect(readEnv({}).drainMs).toBe(10_000);
    expect(readEnv({ NODE_ENV: 'production' }).drainMs).toBe(10_000);
    expect(readEnv({ NODE_ENV: 'test' }).drainMs).toBe(0);
    expect(readEnv({ NODE_ENV: 'test', CONVO_DRAIN_SECONDS: '3' }).drainMs).toBe(3_000);
    expect(readEnv({ CONVO_DRAIN_SECONDS: '0.5' }).drainMs).toBe(500);
    expect(readEnv({ CONVO_DRAIN_SECONDS: '0' }).drainMs).toBe(0);
    for (const value of ['-1', 'ten', '10s', ' ']) {
      expect(() => readEnv({ CONVO_DRAIN_SECONDS: value })).toThrow(
        `CONVO_DRAIN_SECONDS must be a number of seconds, 0 or more, got "${value}"`,
      );
    }
  });

  it('takes the Redis key prefix from CONVO_REDIS_PREFIX (default convo:) and a 15 s worker lease unless CONVO_WORKER_LEASE says otherwise', () => {
    expect(readEnv({}).redisPrefix).toBe('convo:');
    expect(readEnv({ CONVO_REDIS_PREFIX: 'staging:' }).redisPrefix).toBe('staging:');
    expect(readEnv({}).workerLeaseMs).toBe(15_000);
    expect(readEnv({ CONVO_WORKER_LEASE: '30s' }).workerLeaseMs).toBe(30_000);
  });

  it('names the variable whose duration it cannot read', () => {
    for (const name of ['CONVO_WORKER_LEASE', 'CONVO_WEBHOOK_RETRY_SCHEDULE', 'CONVO_CHANNEL_SEND_RETRY_SCHEDULE']) {
      expect(() => readEnv({ [name]: '5s,soon' })).toThrow(`${name}: "soon" is not a duration like 5s, 5m or 250ms`);
    }
  });

  it('trusts no balancer unless CONVO_TRUSTED_PROXIES names them, by address, range or name', () => {
    expect(readEnv({}).settings.trustedProxies).toBe(false);
    expect(readEnv({ CONVO_TRUSTED_PROXIES: ' ' }).settings.trustedProxies).toBe(false);
    expect(readEnv({ CONVO_TRUSTED_PROXIES: '10.0.0.7, 10.1.0.0/16,loopback, ::1' }).settings.trustedProxies).toBe(
      '10.0.0.7,10.1.0.0/16,loopback,::1',
    );
    for (const value of ['true', '*', '1', '10.0.0.0/40', 'lb.internal']) {
      expect(() => readEnv({ CONVO_TRUSTED_PROXIES: value })).toThrow(
        `CONVO_TRUSTED_PROXIES: "${value}" is not an address`,
      );
    }
  });
});
