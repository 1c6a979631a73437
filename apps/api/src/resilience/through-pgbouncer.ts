import { type RunnerTestFile, type SerializedConfig, TestRunner } from 'vitest';

/**
 * The runner of the PgBouncer project (vitest.resilience.config.ts): its test databases are
 * reached through the suite's PgBouncer (testing/databases.ts; pgbouncer.ts starts it), and of
 * the HTTP suite, declared once per database, only Postgres' half runs.
 */
export default class ThroughPgBouncer extends TestRunner {
  constructor(config: SerializedConfig) {
    // What `-t '\[postgres\]'` does (unless given), which a project cannot set for itself.
    super({ ...config, testNamePattern: config.testNamePattern ?? /\[postgres\]/ });
  }

  override onCollectStart(file: RunnerTestFile): void {
    process.env.TEST_PGBOUNCER_URL = this.injectValue('pgbouncerUrl');
    super.onCollectStart(file);
  }
}
