#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=50 --no-allocation-site-pretenuring
import { Email, ROLES, type Role, buildOpenApiDocument } from '@convo/core';
import { randomBytes } from 'node:crypto';
import { Command, InvalidArgumentError, Option } from 'commander';
import { type DatabaseHandle, openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { readEnv } from './env.js';
import { RateLimits } from './edge/rate-limits.js';
import { drainThenClose } from './http/drain.js';
import { buildServer } from './http/server.js';
import { demoKeyPath, readDemoKey, writeDemoKey } from './operator/demo-key-file.js';
import { DEMO_ACCOUNT_NAME, seedDemo } from './operator/demo-seed.js';
import { KEY_TYPES, PLANS, type Plan, accountsService } from './services/accounts.js';
import { peopleService } from './services/people.js';
import { Worker, jobHandlers } from './worker/worker.js';

const env = readEnv();

/** The configured database (DATABASE_URL, DATABASE_POOL_SIZE). */
const openConfiguredDatabase = (): DatabaseHandle => openDatabase(env.databaseUrl, { poolSize: env.databasePoolSize });

/** Opens the database, runs `work`, and always closes it. */
async function withDatabase<T>(work: (database: DatabaseHandle) => Promise<T>): Promise<T> {
  const database = openConfiguredDatabase();
  try {
    return await work(database);
  } finally {
    await database.destroy();
  }
}

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive whole number');
  return n;
};

const print = (value: unknown): void => {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
};

const program = new Command('convo-server').description('Run and operate the Convo API server').showHelpAfterError();
// serve and worker run until stopped: an error nothing handled is logged and ends them non-zero,
// for their supervisor to restart (crash-policy.ts).
program.hook('preAction', async (_program, command) => {
  if (command.name() === 'serve' || command.name() === 'worker')
    (await import('./crash-policy.js')).installCrashPolicy(command.name());
});

/**
 * Stops `stop` on the first SIGTERM or SIGINT, then exits; a second signal ends the process at once (Node's default).
 */
function onShutdown(
  stop: (signal: NodeJS.Signals) => Promise<void>,
  what: (signal: NodeJS.Signals) => string = () => 'finishing requests and jobs under way',
) {
  const handler = (signal: NodeJS.Signals) => {
    process.stderr.write(`convo-server: ${signal}: stopping (${what(signal)})\n`);
    stop(signal).then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`convo-server: shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}

const startWorker = async (
  database: DatabaseHandle,
  logger?: { info(o: object, m?: string): void; error(o: object, m?: string): void },
) => {
  env.settings.secretKey();
  const worker = new Worker({
    database,
    handlers: jobHandlers({ database, settings: env.settings }),
    leaseMs: env.workerLeaseMs,
    ...(logger ? { logger } : {}),
  });
  await worker.start();
  return worker;
};

program
  .command('serve')
  .description(
    'Serve the API (PORT, HOST, DATABASE_URL) with the background worker (unless CONVO_WORKER=false); migrates first unless NODE_ENV=production',
  )
  .action(async () => {
    // A missing CONVO_SECRET_KEY in production stops the server here, not at the first channel.
    env.settings.secretKey();
    const database = openConfiguredDatabase();
    if (env.nodeEnv !== 'production') await migrateToLatest(database.db);
    const rateLimits = RateLimits.create({
      database,
      redisUrl: env.redisUrl,
      redisPrefix: env.redisPrefix,
      authFailuresPerMinute: env.settings.authFailuresPerMinute,
    });
    const app = await buildServer({
      database,
      settings: env.settings,
      rateLimits,
      // `silent` is no logger at all: pino would still make a child logger for every request.
      logger: env.logLevel === 'silent' ? false : { level: env.logLevel },
      publicUrl: env.publicUrl,
    });
    const worker = env.workerInServe ? await startWorker(database, app.log) : undefined;
    // Drain (/readyz 503, still serving), stop accepting, finish in-flight requests and the jobs
    // under way meanwhile (http/drain.ts), then the counts, then the pool.
    // Balancers and supervisors send SIGTERM; Ctrl-C (SIGINT) is someone at a terminal, who is not kept waiting.
    const drainMs = (signal: NodeJS.Signals) => (signal === 'SIGTERM' ? env.drainMs : 0);
    onShutdown(
      async (signal) => {
        await Promise.all([drainThenClose(app, { drainMs: drainMs(signal) }), worker?.stop()]);
        await rateLimits.close();
        await database.destroy();
      },
      (signal) => `draining for ${drainMs(signal) / 1000} s, then finishing requests and jobs under way`,
    );
    await app.listen({ port: env.port, host: env.host });
    process.stderr.write(
      `Convo API on ${env.publicUrl}/v1 (${database.dialect}); reference at ${env.publicUrl}/docs; console at ${env.publicUrl}/console/\n`,
    );
  });

program
  .command('worker')
  .description('Run only the background worker (webhook deliveries, workflow steps, event pruning)')
  .action(async () => {
    const database = openConfiguredDatabase();
    if (env.nodeEnv !== 'production') await migrateToLatest(database.db);
    const log = (level: string) => (obj: object, msg?: string) => {
      const fields = Object.fromEntries(
        Object.entries(obj).map(([k, v]) => [k, v instanceof Error ? { message: v.message, stack: v.stack } : v]),
      );
      process.stderr.write(`${JSON.stringify({ level, time: Date.now(), msg, ...fields })}\n`);
    };
    const worker = await startWorker(database, { info: log('info'), error: log('error') });
    onShutdown(async () => {
      await worker.stop();
      await database.destroy();
    });
    process.stderr.write(`Convo worker ${worker.id} running (${database.dialect})\n`);
  });

program
  .command('migrate')
  .description('Apply pending database migrations')
  .action(() =>
    withDatabase(async (database) => {
      const result = await migrateToLatest(database.db);
      const applied = result.results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
      process.stderr.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date\n');
    }),
  );

const accounts = program.command('accounts').description('Manage accounts');
accounts
  .command('create')
  .description('Create an account')
  .requiredOption('--name <name>', 'account name')
  .addOption(new Option('--plan <plan>', 'plan').choices(PLANS).makeOptionMandatory())
  .option('--rpm <n>', 'requests per minute (required for enterprise; overrides the plan)', positiveInt)
  .option('--json', 'print the account as one JSON object')
  .action((options: { name: string; plan: Plan; rpm?: number; json?: boolean }) =>
    withDatabase(async (database) => {
      await migrateToLatest(database.db);
      const account = await accountsService.createAccount(
        { database },
        {
          name: options.name,
          plan: options.plan,
          rateLimitRpm: options.rpm,
        },
      );
      if (options.json) print(account);
      else process.stdout.write(`Created account ${account.id} (${account.name}, ${account.plan})\n`);
    }),
  );

const keys = program.command('keys').description('Manage API keys');
keys
  .command('create')
  .description('Create a key; its value is printed once and cannot be read again')
  .requiredOption('--account <id>', 'account id')
  .addOption(new Option('--type <type>', 'key type').choices(KEY_TYPES).makeOptionMandatory())
  .option('--name <label>', 'a label for the key')
  .option('--json', 'print the key as one JSON object')
  .action((options: { account: string; type: (typeof KEY_TYPES)[number]; name?: string; json?: boolean }) =>
    withDatabase(async (database) => {
      await migrateToLatest(database.db);
      const key = await accountsService.createKey(
        { database },
        {
          accountId: options.account,
          type: options.type,
          name: options.name,
        },
      );
      if (options.json) print(key);
      else
        process.stdout.write(
          `Created ${key.type} key ${key.id} for ${key.account_id}. Store it now, it is not shown again:\n${key.key}\n`,
        );
    }),
  );
keys
  .command('list')
  .description("List an account's keys (never their values)")
  .requiredOption('--account <id>', 'account id')
  .option('--json', 'print JSON')
  .action((options: { account: string; json?: boolean }) =>
    withDatabase(async (database) => {
      const list = await accountsService.listKeys({ database, accountId: options.account });
      if (options.json) return print(list);
      for (const key of list) {
        process.stdout.write(
          `${key.id}  ${key.type.padEnd(11)}  ${key.redacted}  ${key.revoked_at ? `revoked ${key.revoked_at}` : 'active'}  ${key.name ?? ''}\n`,
        );
      }
    }),
  );
keys
  .command('revoke <keyId>')
  .description('Revoke a key: it stops working on the next request')
  .option('--json', 'print JSON')
  .action((keyId: string, options: { json?: boolean }) =>
    withDatabase(async (database) => {
      const key = await accountsService.revokeKey({ database }, keyId);
      if (options.json) print(key);
      else process.stdout.write(`Revoked ${key.id}\n`);
    }),
  );

const users = program.command('users').description('Manage the people who sign in to the console');
users
  .command('create')
  .description('Give a person a role in an account (creating them, with a printed password, if they are new)')
  .requiredOption('--email <address>', 'their e-mail address')
  .requiredOption('--account <id>', 'account id')
  .addOption(new Option('--role <role>', 'their role in the account').choices(ROLES).makeOptionMandatory())
  .option('--name <name>', 'their name')
  .option('--json', 'print the user as one JSON object')
  .action((options: { email: string; account: string; role: Role; name?: string; json?: boolean }) =>
    withDatabase(async (database) => {
      await migrateToLatest(database.db);
      const email = Email.safeParse(options.email.trim());
      if (!email.success) throw new InvalidArgumentError(`not an e-mail address: ${options.email}`);
      const password = randomBytes(12).toString('base64url');
      const user = await peopleService.createUser(
        { database },
        {
          email: email.data,
          password,
          accountId: options.account,
          role: options.role,
          name: options.name,
        },
      );
      const result = {
        id: user.id,
        email: user.email,
        account_id: options.account,
        role: options.role,
        ...(user.created ? { password } : {}),
      };
      if (options.json) return print(result);
      process.stdout.write(
        user.created
          ? `Created ${user.email} (${options.role} of ${options.account}). Password (shown once): ${password}\nSign in at ${env.publicUrl}/console/\n`
          : `${user.email} is now ${options.role} of ${options.account} (their password is unchanged)\n`,
      );
    }),
  );
users
  .command('reset-password')
  .description('Print a one-time link (valid one hour) where the person sets a new password')
  .requiredOption('--email <address>', 'their e-mail address')
  .option('--json', 'print the link as one JSON object')
  .action((options: { email: string; json?: boolean }) =>
    withDatabase(async (database) => {
      const { token, expiresAt } = await peopleService.createPasswordReset({ database }, options.email);
      const url = `${env.publicUrl}/console/reset-password/${token}`;
      if (options.json) return print({ url, expires_at: expiresAt });
      process.stdout.write(`One-time link to set a new password (until ${expiresAt}):\n${url}\n`);
    }),
  );

program
  .command('seed')
  .description('Load data')
  .requiredOption('--demo', `a demo account ("${DEMO_ACCOUNT_NAME}") with contacts, conversations, messages and orders`)
  .option('--json', 'print the account and key as JSON')
  .action((options: { json?: boolean }) =>
    withDatabase(async (database) => {
      await migrateToLatest(database.db);
      const keyFile = demoKeyPath(env.databaseUrl);
      const { account, key, created, reused, revoked, signIn } = await seedDemo(database, {
        storedKey: readDemoKey(keyFile),
      });
      // Written at each start, so the file is owner-only again even if someone widened it.
      writeDemoKey(keyFile, key.key);
      if (options.json) return print({ account, key, sign_in: signIn });
      const base = `${env.publicUrl}/v1`;
      process.stdout.write(
        `${created ? 'Created' : 'Reusing'} demo account ${account.id} (${account.name}).\n` +
          `API key (full access): ${key.key}\n` +
          `  ${reused ? 'The same as before, kept' : 'Kept'} in ${keyFile} (readable by you only) and printed again at each start.\n` +
          (revoked > 0 ? '  The demo key printed before is revoked: that file no longer held it.\n' : '') +
          `Try: curl -H "Authorization: Bearer ${key.key}" ${base}/conversations\n` +
          `CLI and SDKs: export CONVO_API_KEY=${key.key} CONVO_BASE_URL=${base}\n` +
          `Console: ${env.publicUrl}/console/ (sign in as ${signIn.email} with password ${signIn.password}; a new one at each start)\n`,
      );
    }),
  );

program
  .command('openapi')
  .description('Print the OpenAPI document')
  .action(() => print(buildOpenApiDocument({ serverUrl: env.publicUrl })));

program.parseAsync().catch((error: unknown) => {
  process.stderr.write(`convo-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
