import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CLI_COMMANDS, type OperationId, operationIds, pythonMethodOf, sdkMethodOf } from '@convo/core';
import { SDK_METHODS } from '@convo/sdk';
import { describe, expect, it } from 'vitest';
import { OPERATION_COMMANDS } from './commands/index.js';

const PYTHON_OPERATIONS = fileURLToPath(new URL('../../sdk-python/convo/_operations.py', import.meta.url));

/** The names core's request samples (`x-codeSamples`) call each client by are the clients' own. */
describe("the request samples' names for each client", () => {
  it.each(operationIds)('%s', (id: OperationId) => {
    expect(CLI_COMMANDS[id]).toBe(OPERATION_COMMANDS[id].command);
    expect(sdkMethodOf(id)).toBe(SDK_METHODS[id]);
    const python = readFileSync(PYTHON_OPERATIONS, 'utf8').match(
      new RegExp(`"${id.replaceAll('.', '\\.')}": "([^"]+)"`),
    );
    expect(pythonMethodOf(id)).toBe(python?.[1]);
  });
});
