import { ID_PREFIXES, type IdKind } from '@convo/core';
import { monotonicFactory } from 'ulid';

// Monotonic: ids made in the same millisecond still sort in creation order.
const nextUlid = monotonicFactory();

/** `newId('contact')` → `ct_01JD…`: the type prefix, then a time-sortable ULID. */
export const newId = (kind: IdKind): string => `${ID_PREFIXES[kind]}_${nextUlid()}`;

/** The current time as the API writes it: ISO 8601 UTC with milliseconds. */
export const now = (): string => new Date().toISOString();
