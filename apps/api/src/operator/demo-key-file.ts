import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseDatabaseUrl } from '../db/database.js';

/** The file that keeps the demo key between starts, beside `secret.key`. */
export const DEMO_KEY_FILE = 'demo-api-key';

/** Beside the SQLite file, else in `data/` (Postgres, or an in-memory SQLite), as `secret.key` is. */
export function demoKeyPath(databaseUrl: string | undefined): string {
  const target = parseDatabaseUrl(databaseUrl);
  const dir = target.dialect === 'sqlite' && target.path !== ':memory:' ? dirname(target.path) : 'data';
  return join(dir, DEMO_KEY_FILE);
}

/** The key kept at `path`, or undefined when there is none. */
export function readDemoKey(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim() || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Keeps `key` at `path`, readable and writable by its owner only: it is a full-access key. Written
 * to a new file that replaces the old one, so a reader never sees half a key.
 */
export function writeDemoKey(path: string, key: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const next = `${path}.${process.pid}.tmp`;
  writeFileSync(next, `${key}\n`, { mode: 0o600 });
  // The mode given at creation is filtered by the umask; this one is not.
  chmodSync(next, 0o600);
  renameSync(next, path);
}
