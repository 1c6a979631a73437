import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

/** Statements given a name per process; the queries the API runs are a few hundred shapes. */
const NAMED_STATEMENTS = 500;

/**
 * Marks a statement never to be named, so Postgres plans it for its values: a `LIKE` no trigram index can
 * answer would otherwise switch to a generic plan that scans the trigram index whole.
 */
export const PLAN_PER_VALUE = '/* plan per value */';

/** Postgres' refusal to run a prepared statement whose result columns changed under it (an ALTER). */
const isStaleResultType = (error: unknown): boolean =>
  (error as { code?: string } | null)?.code === '0A000' &&
  /cached plan must not change result type/.test(String((error as Error).message));

/**
 * Kysely's PostgresPool sending named prepared statements, planned once per connection; holds the get_by_id
 * target on Postgres of bench/README.md. Behind PgBouncer's transaction mode, turn it off with
 * `prepared_statements=false` in DATABASE_URL. When an ALTER changes a statement's columns, the statement
 * reruns unnamed outside a transaction and the connection is closed, so no stale copy outlives the ALTER.
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
