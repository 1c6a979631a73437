import * as z from 'zod';

/**
 * Zod compiles object parsers with `new Function` when it finds it may, and it finds out by trying
 * `Function('')` as each object schema is built. The console's CSP (script-src 'self', no
 * 'unsafe-eval') refuses that, and the browser reports every refusal as a violation. Jitless, Zod
 * never tries. This module is main.tsx's first import: the contract's schemas are built as
 * @convo/core loads, so the setting must come before it.
 */
z.config({ jitless: true });
