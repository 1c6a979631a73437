import { afterAll } from 'vitest';
import { startFakeGraphApi } from '../testing/fake-graph-api.js';
import { testSettings } from '../testing/harness.js';
import { describeFuzz } from '../testing/openapi-fuzz.js';

// Every operation of the served OpenAPI document, fuzzed on postgres (the other database has its own file).
// Operations that ask Meta (a channel's templates) get the fake Graph API's answers.
const graph = await startFakeGraphApi({
  templatesForAnyAccount: [
    { name: 'hello', language: 'en_US', status: 'APPROVED', category: 'UTILITY', components: [] },
  ],
});
afterAll(() => graph.close());
describeFuzz('postgres', testSettings({ graphApiUrl: graph.url }));
