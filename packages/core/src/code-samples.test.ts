import { describe, expect, it } from 'vitest';
import { codeSamples } from './code-samples.js';
import { endpoints, fillPath, operationIds } from './endpoints.js';
import { operationExamples } from './story.js';

describe('the request samples of every operation', () => {
  it.each(operationIds)('%s: curl, the TypeScript SDK, Python and the CLI, on the given server', (id) => {
    const samples = codeSamples(id, 'https://api.tostado.example');
    expect(samples.map((s) => s.label)).toEqual(['curl', 'TypeScript SDK', 'Python', 'CLI']);
    const { method, path } = endpoints[id];
    const [curl, typescript, python, cli] = samples.map((s) => s.source) as [string, string, string, string];
    const target = `https://api.tostado.example/v1${fillPath(path, operationExamples[id].request.params)}`;
    expect(curl).toContain(`"${target}`);
    expect(curl).toContain('-H "Authorization: Bearer $CONVO_API_KEY"');
    if (method !== 'GET') expect(curl).toContain(`-X ${method}`);
    expect(typescript).toContain("baseUrl: 'https://api.tostado.example/v1'");
    expect(python).toContain('base_url="https://api.tostado.example/v1"');
    expect(cli).toMatch(/^convo [a-z]/);
    expect(cli).toContain('--base-url https://api.tostado.example/v1');
    for (const sample of samples) expect(sample.source).not.toMatch(/["']example["']|\bTODO\b|<[a-z_]+>|…/);
  });
});
