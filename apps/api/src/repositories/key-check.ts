/**
 * The check of a request's API key that rides along with the request's own reads, on Postgres.
 *
 * Every request must be refused as soon as its key is revoked (SERVICE-SPEC: "Revocation takes
 * effect immediately"), and on Postgres, which several server processes share, only the database
 * knows: the key was looked up by a statement of its own on every request, a round trip and a
 * statement more for each read. For a read operation whose key a process has seen before, the
 * principal it remembers is used at once, and the request's first read statements are run as
 *
 *     select * from (<the statement>) as convo_key_checked
 *     where exists (select from api_keys where id = $n and revoked_at is null)
 *
 * The `exists` is a one-time filter (a primary-key probe before the statement runs): a row
 * returned proves the key active at a moment after the request arrived, and the check is
 * `confirmed`. A request whose reads returned no row (a 404; a list or search returns at least
 * its total's row) looks its key up after the handler, before anything is sent (trpc/init.ts):
 * a revoked key gets its 401, never the data read under the remembered account. Writes never run
 * before their key is looked up. Checked this way, a search served about 25 % more requests per
 * second and a read by id about 50 % (bench/README.md, ninth pass).
 */
export class KeyCheck {
  /** Set once a read of the request returned a row with the check in its statement. */
  confirmed = false;

  constructor(
    readonly keyId: string,
    readonly keyHash: string,
  ) {}
}

/** The checked form of each statement's SQL, made once per SQL text. */
const checkedTexts = new Map<string, string>();

/**
 * `sql` (a select with `parameterCount` parameters) with the key check around it: the key's id is
 * its next parameter. Wrapping keeps the statement's plan and row order: a subquery with an ORDER
 * BY or a LIMIT is never pulled up into the outer query, and the outer query adds no step but the
 * one-time filter; a statement that Postgres plans generically after five executions still does
 * (search-plan-cache.test.ts).
 */
export function checkedStatement(sql: string, parameterCount: number): string {
  let text = checkedTexts.get(sql);
  if (text === undefined) {
    text = `select * from (${sql}) as convo_key_checked where exists (select from api_keys where api_keys.id = $${parameterCount + 1} and api_keys.revoked_at is null)`;
    // As many as the statements compiled once (prepared.ts): their shapes are bounded.
    if (checkedTexts.size < 10_000) checkedTexts.set(sql, text);
  }
  return text;
}
