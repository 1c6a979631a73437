/**
 * Summarises a V8 CPU profile (`node --cpu-prof`) of the real server: self time by package and
 * by function, so a run says where the server's CPU goes (`pnpm bench -- --cpu-prof`).
 *
 *   node --import tsx src/cpu-profile.ts FILE.cpuprofile
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  totalMs: number;
  /** Share of samples in which the process was idle (waiting for I/O). */
  idlePercent: number;
  packages: { name: string; percent: number }[];
  functions: { name: string; where: string; percent: number }[];
}

/** `…/node_modules/.pnpm/fastify@5…/node_modules/fastify/lib/x.js` → `fastify`; the api's bundle → `@convo/api`. */
function packageOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const rest = url.slice(modules + '/node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] as string);
  }
  if (url.startsWith('node:')) return 'node (built-in)';
  if (url.includes('/apps/api/')) return '@convo/api';
  if (url.includes('/packages/core/')) return '@convo/core';
  return url;
}

export function summarizeProfile(path: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    self.set(id, (self.get(id) ?? 0) + delta);
    total += delta;
  });
  const packages = new Map<string, number>();
  const functions = new Map<string, { name: string; where: string; time: number }>();
  let idle = 0;
  for (const [id, time] of self) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += time;
      continue;
    }
    const pkg = packageOf(url, functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + time);
    const key = `${functionName}@${url}:${lineNumber}`;
    const entry = functions.get(key) ?? {
      name: functionName || '(anonymous)',
      where: `${pkg}${url ? `:${lineNumber + 1}` : ''}`,
      time: 0,
    };
    entry.time += time;
    functions.set(key, entry);
  }
  const busy = Math.max(1, total - idle);
  return {
    totalMs: total / 1000,
    idlePercent: (idle / Math.max(1, total)) * 100,
    packages: [...packages]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, time]) => ({ name, percent: (time / busy) * 100 })),
    functions: [...functions.values()]
      .sort((a, b) => b.time - a.time)
      .slice(0, top)
      .map((f) => ({ name: f.name, where: f.where, percent: (f.time / busy) * 100 })),
  };
}

export function renderProfile(summary: ProfileSummary): string {
  return [
    `CPU profile of the real server: ${summary.totalMs.toFixed(0)} ms sampled, ${summary.idlePercent.toFixed(0)}% idle; shares of the busy time:`,
    '',
    '| package | self % |',
    '| --- | ---: |',
    ...summary.packages.map((p) => `| ${p.name} | ${p.percent.toFixed(1)} |`),
    '',
    '| function | where | self % |',
    '| --- | --- | ---: |',
    ...summary.functions.map((f) => `| \`${f.name}\` | ${f.where} | ${f.percent.toFixed(1)} |`),
    '',
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(renderProfile(summarizeProfile(process.argv[2] as string)));
}
