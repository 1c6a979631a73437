import type { OperationId } from './contract.js';
import { expectTypeOf, it } from 'vitest';
import { SDK_METHODS } from './operations.js';

it('must name an SDK method for every operation of the contract', () => {
  expectTypeOf(SDK_METHODS).toEqualTypeOf<Record<OperationId, string>>();
  // @ts-expect-error: an operation of the table without an SDK method does not type-check
  const incomplete: Record<OperationId, string> = { 'conversations.list': 'conversations.list' };
  void incomplete;
});
