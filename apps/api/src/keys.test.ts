import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateKey, hashKey } from './keys.js';

describe('hashKey', () => {
  it('is the SHA-256 in hex of the key as UTF-8, as stored hashes were made', () => {
    const reference = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');
    for (const key of [generateKey('full_access'), generateKey('read_only'), generateKey('webhook'), 'convo_sk_é€💬', '']) {
      expect(hashKey(key)).toBe(reference(key));
    }
    // FIPS 180-2's test vector.
    expect(hashKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
