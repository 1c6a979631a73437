import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Channel secrets at rest: AES-256-GCM under the server's secret key with a fresh nonce each time, sealed as
// base64url `v1.<nonce>.<tag>.<ciphertext>`.

/** Lets a later key or algorithm be told apart by its prefix. */
const VERSION = 'v1';

export function sealSecret(key: Buffer, plaintext: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, nonce, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

/** Throws when the value was sealed under another key or altered. */
export function openSecret(key: Buffer, sealed: string): string {
  const [version, nonce, tag, ciphertext] = sealed.split('.');
  if (version !== VERSION || nonce === undefined || tag === undefined || ciphertext === undefined)
    throw new Error('Not a sealed secret');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(nonce, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}

/** `CONVO_SECRET_KEY`: 32 bytes as 64 hex digits or in base64. */
export function parseSecretKey(value: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32)
    throw new Error(
      'CONVO_SECRET_KEY must be 32 bytes: 64 hex digits or 44 characters of base64 (openssl rand -hex 32)',
    );
  return key;
}

export const SECRET_KEY_FILE = 'secret.key';

/** Outside production, a key made once and kept in the data folder, so a developer needs no set-up. */
export function developmentSecretKey(dataDir: string): Buffer {
  const path = join(dataDir, SECRET_KEY_FILE);
  if (!existsSync(path)) {
    mkdirSync(dataDir, { recursive: true });
    try {
      writeFileSync(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      // Another process made it first: read theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    chmodSync(path, 0o600);
  }
  return parseSecretKey(readFileSync(path, 'utf8').trim());
}
