import { describe, expect, it } from 'vitest';
import { KEY_PREFIXES, generateKey, hashKey, redactKey } from './keys.js';

describe('hashKey', () => {
  it('is the SHA-256 in hex of the key as UTF-8, as stored hashes were made', () => {
    // Known answers: FIPS 180-2's "abc", the empty string, and a non-ASCII key (its UTF-8 bytes).
    expect(hashKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashKey('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hashKey('é')).toBe('4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
  });
});

describe('generateKey', () => {
  it('shows the type in the prefix and carries 256 random bits', () => {
    for (const type of ['full_access', 'read_only', 'webhook'] as const) {
      const [first, second] = [generateKey(type), generateKey(type)];
      expect(first.startsWith(KEY_PREFIXES[type])).toBe(true);
      expect(first).not.toBe(second);
      expect(
        Buffer.from(first.slice(KEY_PREFIXES[type].length), type === 'webhook' ? 'base64' : 'base64url'),
      ).toHaveLength(32);
      expect(redactKey(first)).toBe(`${first.slice(0, KEY_PREFIXES[type].length + 4)}…${first.slice(-4)}`);
    }
  });
});
