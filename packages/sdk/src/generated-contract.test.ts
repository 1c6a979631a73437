import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script without types, run by `pnpm --filter @convo/sdk generate`.
import { generateContract } from '../scripts/generate-contract.mjs';

describe('the generated contract', () => {
  it('is what the generator makes from @convo/core now (else run `pnpm --filter @convo/sdk generate`)', async () => {
    const committed = readFileSync(new URL('./generated/contract.ts', import.meta.url), 'utf8');
    expect(
      committed === (await generateContract()),
      'src/generated/contract.ts is out of date: run `pnpm --filter @convo/sdk generate`',
    ).toBe(true);
    // openapi-typescript takes seconds over the whole document, more while the rest of the suite runs beside it.
  }, 60_000);
});
