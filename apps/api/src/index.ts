export { buildServer, type ServerOptions } from './http/server.js';
export { openDatabase, type DatabaseHandle } from './db/database.js';
export { migrateToLatest } from './db/migrate.js';
export { accountsService } from './services/accounts.js';
export { defaultSettings, type Settings } from './settings.js';
export { Worker } from './worker/worker.js';
export { jobHandlers } from './worker/handlers.js';
export type { AppRouter } from './trpc/router.js';
export { seedDemo } from './operator/demo-seed.js';
