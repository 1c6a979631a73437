import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

/** Statements given a name per process; the queries the API runs are a few hundred shapes. */
const NAMED_STATEMENTS = 500;

/**
 * Marks a statement Postgres must plan for its values at every execution, never named: a `LIKE`
 * whose pattern no trigram index can answer, which as a named statement turns to a generic plan
 * after five runs and scans the trigram index whole (bench/README.md, "Indexes and query plans").
 */
export const PLAN_PER_VALUE = '/* plan per value */';

/** Postgres' refusal to run a prepared statement whose result columns changed under it (an ALTER). */
const isStaleResultType = (error: unknown): boolean =>
  (error as { code?: string } | null)?.code === '0A000' && /cached plan must not change result type/.test(String((error as Error).message));

/**
 * Kysely's PostgresPool over a pg pool whose statements go out as named prepared statements, so
 * that Postgres parses and plans each statement once per connection instead of at every
 * execution: it exists for the benchmark's get-by-id target on Postgres (bench/README.md), which
 * three unnamed statements a request (key, rate limit, read) miss.
 *
 * Named statements live on one server connection, so a database reached through PgBouncer in
 * transaction mode (before 1.21) turns them off (`prepared_statements=false` in DATABASE_URL).
 * After an ALTER changes a statement's columns (a rolling migration), Postgres refuses the
 * connection's copy: the statement runs again unnamed when it is not inside a transaction, and the
 * connection is closed instead of going back to the pool, so no copy outlives the ALTER.
 */
export function preparedStatementsPool(pool: pg.Pool): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (sql: string): string | undefined => {
    let name = names.get(sql);
    if (name === undefined && names.size < NAMED_STATEMENTS) {
      name = `convo_${names.size}`;
      names.set(sql, name);
    }
    return name;
  };

  return {
    async connect() {
      const client = await pool.connect();
      let inTransaction = false;
      let stale: Error | undefined;

      // pg's result is Kysely's PostgresQueryResult in all but its declared type.
      const send = <R>(config: pg.QueryConfig) => client.query(config) as unknown as Promise<PostgresQueryResult<R>>;

      async function query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
        // Kysely's own transaction statements carry no parameters and gain nothing from a name.
        if (parameters.length === 0) {
          if (/^(begin|start transaction)\b/i.test(sql)) inTransaction = true;
          else if (/^(commit|rollback)$/i.test(sql)) inTransaction = false;
          return send<R>({ text: sql });
        }
        const values = [...parameters];
        const name = sql.includes(PLAN_PER_VALUE) ? undefined : nameOf(sql);
        if (name === undefined) return send<R>({ text: sql, values });
        try {
          return await send<R>({ name, text: sql, values });
        } catch (error) {
          if (!isStaleResultType(error)) throw error;
          stale = error as Error;
          if (inTransaction) throw error;
          return send<R>({ text: sql, values });
        }
      }

      const connection = {
        query,
        // A truthy argument tells pg's pool to close the connection rather than keep it.
        release: () => client.release(stale),
      };
      // Kysely calls query(cursor) only when its dialect is given a cursor class, which ours is not.
      return connection as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
