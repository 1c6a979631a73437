/**
 * The bare reference server: plain node:http, the same drivers as the api (better-sqlite3, pg with
 * a pool of 10), hand-written SQL, and the same JSON for the benchmark's routes. It runs on a copy
 * of the data with no index beyond the primary keys, so the ratio real ÷ reference shows what the
 * real server's indexes and queries buy over the naive thing, on the same machine in the same run.
 *
 *   REFERENCE_DATABASE_URL=file:… PORT=3902 node --import tsx src/reference-server.ts
 *
 * Routes: GET /healthz, GET /v1/conversations (status, platform, search, limit, offset),
 * GET /v1/conversations/:id, GET /v1/contacts (tag, search, limit, offset), POST /v1/messages.
 * Keys are checked by their SHA-256 like the real server (no cache); there is no rate limit.
 */
import SQLite from 'better-sqlite3';
import { createHash, randomBytes } from 'node:crypto';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

type Param = string | number | null;
type Row = Record<string, unknown>;

interface Querier {
  all<T = Row>(sql: string, params: Param[]): Promise<T[]>;
  run(sql: string, params: Param[]): Promise<void>;
}

interface Driver extends Querier {
  transaction<T>(work: (tx: Querier) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** One better-sqlite3 connection; a transaction holds it (other statements wait), like Kysely's SQLite driver. */
function sqliteDriver(path: string): Driver {
  const db = new SQLite(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const statements = new Map<string, SQLite.Statement>();
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  // Checking `held` and using the connection happen in one synchronous step, so nothing slips in between.
  let held: Promise<void> | undefined;
  const direct: Querier = {
    all: async <T>(sql: string, params: Param[]) => prepare(sql).all(...params) as T[],
    run: async (sql: string, params: Param[]) => {
      prepare(sql).run(...params);
    },
  };
  return {
    all: async <T>(sql: string, params: Param[]) => {
      while (held !== undefined) await held;
      return direct.all<T>(sql, params);
    },
    run: async (sql, params) => {
      while (held !== undefined) await held;
      return direct.run(sql, params);
    },
    async transaction<T>(work: (tx: Querier) => Promise<T>): Promise<T> {
      while (held !== undefined) await held;
      let release!: () => void;
      held = new Promise<void>((resolve) => {
        release = resolve;
      });
      try {
        db.exec('begin immediate');
        try {
          const result = await work(direct);
          db.exec('commit');
          return result;
        } catch (error) {
          db.exec('rollback');
          throw error;
        }
      } finally {
        held = undefined;
        release();
      }
    },
    close: async () => {
      db.close();
    },
  };
}

/** `?` placeholders → `$1, $2, …`. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

function postgresDriver(url: string): Driver {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  const on = (client: pg.Pool | pg.PoolClient): Querier => ({
    all: async <T>(sql: string, params: Param[]) => (await client.query(numbered(sql), params)).rows as T[],
    run: async (sql: string, params: Param[]) => {
      await client.query(numbered(sql), params);
    },
  });
  const direct = on(pool);
  return {
    ...direct,
    async transaction<T>(work: (tx: Querier) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await work(on(client));
        await client.query('commit');
        return result;
      } catch (error) {
        await client.query('rollback').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ulid = () => {
  let t = Date.now();
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const bytes = randomBytes(16);
  let random = '';
  for (let i = 0; i < 16; i++) random += CROCKFORD[(bytes[i] as number) % 32];
  return time + random;
};

const CONVERSATION_COLUMNS = `c.id, c.contact_id, c.platform, c.channel_id, c.status, c.message_count, c.last_message_content, c.last_message_at,
  c.created_at, c.updated_at, ct.name as contact_name, ct.phone as contact_phone`;
const CONVERSATION_FROM = 'conversations c join contacts ct on ct.account_id = c.account_id and ct.id = c.contact_id';

const toConversation = (r: Row) => ({
  id: r.id,
  contact: { id: r.contact_id, name: r.contact_name, phone: r.contact_phone },
  platform: r.platform,
  channel_id: r.channel_id ?? null,
  status: r.status,
  message_count: Number(r.message_count),
  last_message:
    r.last_message_at === null ? null : { content: r.last_message_content ?? '', timestamp: r.last_message_at },
  created_at: r.created_at,
  updated_at: r.updated_at,
});

const toContact = (r: Row) => ({
  id: r.id,
  name: r.name,
  phone: r.phone,
  email: r.email,
  tags: JSON.parse(r.tags as string) as unknown,
  attributes: JSON.parse(r.attributes as string) as unknown,
  identities: JSON.parse(r.identities as string) as unknown,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

function pagination(query: URLSearchParams): { limit: number; offset: number } {
  const read = (name: string, fallback: number, min: number, max: number) => {
    const raw = query.get(name);
    if (raw === null) return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > max)
      throw new HttpError(400, 'bad_request', `${name} must be an integer from ${min} to ${max}`);
    return n;
  };
  return { limit: read('limit', 20, 1, 100), offset: read('offset', 0, 0, Number.MAX_SAFE_INTEGER) };
}

/** Lower-cased search text, and its digits when it has any (as the contract's search works). */
function searchOf(query: URLSearchParams): { text: string; digits?: string } | undefined {
  const text = query.get('search')?.trim();
  if (!text) return undefined;
  return { text: text.toLowerCase(), ...(/\d/.test(text) ? { digits: text.replace(/\D/g, '') } : {}) };
}

export async function startReferenceServer(databaseUrl: string, port: number, host = '127.0.0.1') {
  const driver = /^postgres(ql)?:\/\//i.test(databaseUrl)
    ? postgresDriver(databaseUrl)
    : sqliteDriver(databaseUrl.replace(/^file:(\/\/)?/, ''));

  async function authenticate(req: IncomingMessage): Promise<{ accountId: string; type: string }> {
    const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '');
    if (!match?.[1]) throw new HttpError(401, 'unauthorized', 'Missing API key');
    const hash = createHash('sha256').update(match[1], 'utf8').digest('hex');
    const [key] = await driver.all<{ account_id: string; type: string }>(
      'select k.account_id, k.type from api_keys k join accounts a on a.id = k.account_id where k.key_hash = ? and k.revoked_at is null',
      [hash],
    );
    if (!key) throw new HttpError(401, 'unauthorized', 'Invalid API key');
    return { accountId: key.account_id, type: key.type };
  }

  async function listConversations(accountId: string, query: URLSearchParams) {
    const { limit, offset } = pagination(query);
    const where = ['c.account_id = ?'];
    const params: Param[] = [accountId];
    const status = query.get('status');
    if (status) {
      where.push('c.status = ?');
      params.push(status);
    }
    const platform = query.get('platform');
    if (platform) {
      where.push('c.platform = ?');
      params.push(platform);
    }
    const search = searchOf(query);
    if (search) {
      where.push(search.digits ? '(ct.name_search like ? or ct.phone_digits like ?)' : 'ct.name_search like ?');
      params.push(`%${search.text}%`, ...(search.digits ? [`%${search.digits}%`] : []));
    }
    const [rows, [count]] = await Promise.all([
      driver.all(
        `select ${CONVERSATION_COLUMNS} from ${CONVERSATION_FROM} where ${where.join(' and ')} order by c.last_activity_at desc, c.id desc limit ? offset ?`,
        [...params, limit, offset],
      ),
      driver.all<{ total: number | string }>(
        `select count(*) as total from ${search ? CONVERSATION_FROM : 'conversations c'} where ${where.join(' and ')}`,
        params,
      ),
    ]);
    const total = Number(count?.total ?? 0);
    return { data: rows.map(toConversation), total, limit, offset, has_more: offset + rows.length < total };
  }

  async function getConversation(accountId: string, id: string) {
    const [row] = await driver.all(
      `select ${CONVERSATION_COLUMNS} from ${CONVERSATION_FROM} where c.account_id = ? and c.id = ?`,
      [accountId, id],
    );
    if (!row) throw new HttpError(404, 'not_found', `No such conversation: ${id}`);
    return toConversation(row);
  }

  async function listContacts(accountId: string, query: URLSearchParams) {
    const { limit, offset } = pagination(query);
    const where = ['c.account_id = ?'];
    const params: Param[] = [accountId];
    const search = searchOf(query);
    if (search) {
      where.push(`(c.name_search like ? or c.email_search like ?${search.digits ? ' or c.phone_digits like ?' : ''})`);
      params.push(`%${search.text}%`, `%${search.text}%`, ...(search.digits ? [`%${search.digits}%`] : []));
    }
    const tag = query.get('tag');
    if (tag !== null) {
      where.push(
        'exists (select 1 from contact_tags t where t.account_id = c.account_id and t.contact_id = c.id and t.tag = ?)',
      );
      params.push(tag);
    }
    const [rows, [count]] = await Promise.all([
      driver.all(
        `select * from contacts c where ${where.join(' and ')} order by c.created_at desc, c.id desc limit ? offset ?`,
        [...params, limit, offset],
      ),
      driver.all<{ total: number | string }>(
        `select count(*) as total from contacts c where ${where.join(' and ')}`,
        params,
      ),
    ]);
    const total = Number(count?.total ?? 0);
    return { data: rows.map(toContact), total, limit, offset, has_more: offset + rows.length < total };
  }

  async function sendMessage(accountId: string, body: unknown) {
    const input = body as { conversation_id?: unknown; content?: unknown; message?: unknown; type?: unknown } | null;
    const content = input?.content ?? input?.message;
    if (typeof input?.conversation_id !== 'string' || typeof content !== 'string' || content.length === 0) {
      throw new HttpError(400, 'bad_request', 'conversation_id and content are required');
    }
    if (input.type !== undefined && input.type !== 'text') throw new HttpError(400, 'bad_request', 'type must be text');
    const conversationId = input.conversation_id;
    return driver.transaction(async (tx) => {
      const [conversation] = await tx.all<{ status: string }>(
        'select status from conversations where account_id = ? and id = ?',
        [accountId, conversationId],
      );
      if (!conversation) throw new HttpError(404, 'not_found', `No such conversation: ${conversationId}`);
      if (conversation.status === 'archived') throw new HttpError(400, 'bad_request', 'The conversation is archived');
      const at = new Date().toISOString();
      const message = {
        id: `msg_${ulid()}`,
        conversation_id: conversationId,
        direction: 'outbound',
        type: 'text',
        content,
        status: 'queued',
        platform_message_id: null,
        error: null,
        media: null,
        created_at: at,
        updated_at: at,
      };
      await tx.run(
        'insert into messages (account_id, id, conversation_id, direction, type, content, status, created_at) values (?, ?, ?, ?, ?, ?, ?, ?)',
        [accountId, message.id, conversationId, message.direction, message.type, content, message.status, at],
      );
      await tx.run(
        `update conversations set message_count = message_count + 1, last_message_content = ?, last_message_at = ?, last_activity_at = ?, updated_at = ?
         where account_id = ? and id = ?`,
        [content, at, at, at, accountId, conversationId],
      );
      return message;
    });
  }

  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  const send = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://reference');
    const path = url.pathname;
    if (req.method === 'GET' && path === '/healthz') return send(res, 200, { status: 'ok' });
    if (!path.startsWith('/v1/')) throw new HttpError(404, 'not_found', 'Not found');
    const principal = await authenticate(req);
    if (req.method === 'GET') {
      if (principal.type === 'webhook') throw new HttpError(403, 'forbidden', 'This key cannot read');
      if (path === '/v1/conversations')
        return send(res, 200, await listConversations(principal.accountId, url.searchParams));
      const match = /^\/v1\/conversations\/([^/]+)$/.exec(path);
      if (match)
        return send(res, 200, await getConversation(principal.accountId, decodeURIComponent(match[1] as string)));
      if (path === '/v1/contacts') return send(res, 200, await listContacts(principal.accountId, url.searchParams));
    }
    if (req.method === 'POST' && path === '/v1/messages') {
      if (principal.type !== 'full_access') throw new HttpError(403, 'forbidden', 'This key cannot write');
      if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? ''))
        throw new HttpError(400, 'bad_request', 'Send JSON');
      let body: unknown;
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        throw new HttpError(400, 'bad_request', 'The body is not valid JSON');
      }
      return send(res, 201, await sendMessage(principal.accountId, body));
    }
    throw new HttpError(404, 'not_found', `No such path: ${req.method} ${path}`);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof HttpError)
        return send(res, error.status, { error: { code: error.code, message: error.message } });
      process.stderr.write(`reference server: ${error instanceof Error ? error.stack : String(error)}\n`);
      send(res, 500, { error: { code: 'server_error', message: 'Internal error' } });
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return {
    server,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await driver.close();
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const url = process.env.REFERENCE_DATABASE_URL;
  if (!url) throw new Error('Set REFERENCE_DATABASE_URL (file:PATH or postgres://…)');
  const port = Number(process.env.PORT ?? 3902);
  const host = process.env.HOST || '127.0.0.1';
  const { close } = await startReferenceServer(url, port, host);
  process.stderr.write(
    `reference server on http://${host}:${port} (${url.startsWith('postgres') ? 'postgres' : 'sqlite'})\n`,
  );
  const stop = () => {
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
