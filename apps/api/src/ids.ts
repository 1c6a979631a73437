import { getRandomValues } from 'node:crypto';
import { ID_PREFIXES, type IdKind } from '@convo/core';
import { monotonicFactory } from 'ulid';

const POOL_BYTES = 4096;
const pool = new Uint8Array(POOL_BYTES);
let poolOffset = POOL_BYTES;

/**
 * ulid's random source, drawn from a pool of cryptographic random bytes: its default asks the operating system
 * once per character, too slow for a request id on every response.
 */
function pooledRandom(): number {
  if (poolOffset === POOL_BYTES) {
    getRandomValues(pool);
    poolOffset = 0;
  }
  return (pool[poolOffset++] as number) / 256;
}

/** Monotonic: ULIDs made in the same millisecond still sort in creation order. */
export const nextUlid = monotonicFactory(pooledRandom);

/** `newId('contact')` → `ct_01JD…`: the type prefix, then a time-sortable ULID. */
export const newId = (kind: IdKind): string => `${ID_PREFIXES[kind]}_${nextUlid()}`;

/** The current time as the API writes it: ISO 8601 UTC with milliseconds. */
export const now = (): string => new Date().toISOString();
