/**
 * The server's layers, checked by `pnpm lint` (dependency-cruiser): each layer imports only the
 * layers below it, type imports included (tsPreCompilationDeps), and nothing imports in a cycle.
 *
 *   transport (http/, trpc/, console/) → edge/ and operations.ts → services/ → repositories/ → db/
 *
 * The worker calls services and repositories; only bin.ts (and index.ts, the package's entry)
 * start it. The files at the top of src/ that belong to no layer (errors, ids, settings, keys…)
 * may be imported by any layer and import none of them.
 */
const TRANSPORT = '^src/(http|trpc|console)/';
const EDGE = '^src/(edge/|operations\\.ts$)';
const SERVICES = '^src/services/';
const REPOSITORIES = '^src/repositories/';
const DB = '^src/db/';
const WORKER = '^src/worker/';
/** db/ but for the handle and the table types, which every layer may name. */
const DB_BEYOND_TYPES = '^src/db/(?!database\\.ts$|schema\\.ts$)';
/** Files of no layer: shared helpers every layer may use. */
const SHARED_FILES = ['errors', 'ids', 'env', 'settings', 'keys', 'passwords', 'secret-box', 'serializers']
  .concat(['validation', 'webhook-addresses', 'crash-policy'])
  .join('|');
const SHARED = `^src/(${SHARED_FILES})\\.ts$|^src/channels/`;

const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A cycle means a type or a function sits in the wrong module: move it down to the layer both sides use.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    forbid(
      'worker-only-from-bin',
      'Only bin.ts, index.ts and the worker itself import the worker. To queue a job, write it (repositories/jobs.ts).',
      { path: '^src/', pathNot: `${WORKER}|^src/(bin|index)\\.ts$|\\.test\\.ts$|^src/testing/` },
      { path: WORKER },
    ),
    forbid(
      'transport-not-below-services',
      'Routes and procedures call operations or service verbs, never repositories or SQL.',
      { path: TRANSPORT },
      {
        path: `${REPOSITORIES}|^src/db/(?!database\\.ts$)`,
      },
    ),
    forbid(
      'edge-not-up',
      'The edge and the operation runner never call the transports.',
      { path: EDGE },
      {
        path: TRANSPORT,
      },
    ),
    forbid(
      'services-not-up',
      'Services never call the transports, the edge, the operation runner or the worker.',
      { path: SERVICES },
      {
        path: `${TRANSPORT}|${EDGE}|${WORKER}`,
      },
    ),
    forbid(
      'repositories-not-up',
      'Repositories hold SQL and return rows: they call nothing above them.',
      { path: REPOSITORIES },
      {
        path: `${TRANSPORT}|${EDGE}|${SERVICES}|${WORKER}|^src/operator/`,
      },
    ),
    forbid(
      'db-not-up',
      'db/ knows the databases, not the application.',
      { path: DB },
      {
        path: `${TRANSPORT}|${EDGE}|${SERVICES}|${REPOSITORIES}|${WORKER}|^src/operator/`,
      },
    ),
    forbid(
      'worker-not-transport',
      'The worker calls services and repositories, never the transports, the edge or the operation runner.',
      { path: WORKER },
      {
        path: `${TRANSPORT}|${EDGE}`,
      },
    ),
    forbid(
      'shared-imports-no-layer',
      'Shared helpers are below every layer.',
      { path: SHARED },
      {
        path: `${TRANSPORT}|${EDGE}|${SERVICES}|${REPOSITORIES}|${WORKER}|^src/operator/|${DB_BEYOND_TYPES}`,
      },
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$|^src/testing/|^src/resilience/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
