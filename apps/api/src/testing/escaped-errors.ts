import { afterAll, beforeAll } from 'vitest';

/**
 * Errors that escape every handler while the calling test file runs (uncaught exceptions and
 * unhandled rejections): in production each one ends the process (crash-policy.ts), so a test
 * that sends hostile requests asserts this stays empty.
 */
export function recordEscapedErrors(): unknown[] {
  const escaped: unknown[] = [];
  const record = (error: unknown) => escaped.push(error);
  beforeAll(() => {
    process.on('uncaughtException', record);
    process.on('unhandledRejection', record);
  });
  afterAll(() => {
    process.off('uncaughtException', record);
    process.off('unhandledRejection', record);
  });
  return escaped;
}
