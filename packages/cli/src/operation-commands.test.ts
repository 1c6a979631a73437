import { Convo, SDK_METHODS } from '@convo/sdk';
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { OPERATION_COMMANDS } from './commands/index.js';
import { EXIT_CODES } from './errors.js';
import { parseItem, parseKeyValue, parserFor, sdkMethod } from './operation-commands.js';
import type { FieldSpec } from './operation-spec.js';
import { run } from './program.js';
import { openEventStream, testEvent, testServer, unauthorized } from './test-event-server.js';
import { testTerminal } from './test-terminal.js';

const field = (overrides: Partial<FieldSpec>): FieldSpec => ({
  name: 'x',
  option: 'x',
  placeholder: 'x',
  kind: 'string',
  required: false,
  nullable: false,
  choices: undefined,
  itemFields: undefined,
  description: '',
  ...overrides,
});

describe('option values', () => {
  it('parses key=value as a string and key:=JSON as JSON', () => {
    expect(parseKeyValue('tier=gold')).toEqual({ tier: 'gold' });
    expect(parseKeyValue('note=a=b')).toEqual({ note: 'a=b' });
    expect(parseKeyValue('visits:=3')).toEqual({ visits: 3 });
    expect(parseKeyValue('vip:=true')).toEqual({ vip: true });
    expect(parseKeyValue('empty=')).toEqual({ empty: '' });
    expect(() => parseKeyValue('nokey')).toThrow(InvalidArgumentError);
    expect(() => parseKeyValue('bad:={')).toThrow(InvalidArgumentError);
  });

  it('parses name:quantity:unit_amount from the right, so the name may hold colons', () => {
    const fields = [
      { name: 'name', kind: 'string' as const },
      { name: 'quantity', kind: 'integer' as const },
      { name: 'unit_amount', kind: 'integer' as const },
    ];
    expect(parseItem('Denim jacket:1:18990', fields)).toEqual({
      name: 'Denim jacket',
      quantity: 1,
      unit_amount: 18990,
    });
    expect(parseItem('Belt: black:2:500', fields)).toEqual({ name: 'Belt: black', quantity: 2, unit_amount: 500 });
    expect(parseItem('{"name":"Hat","quantity":1,"unit_amount":5}', fields)).toEqual({
      name: 'Hat',
      quantity: 1,
      unit_amount: 5,
    });
    expect(() => parseItem('Hat:1', fields)).toThrow(/name:quantity:unit_amount/);
    expect(() => parseItem('Hat:one:5', fields)).toThrow(/integer/);
  });

  it('collects repeated options', () => {
    const tags = parserFor(field({ kind: 'strings' }));
    expect(tags('new', tags('vip', undefined))).toEqual(['vip', 'new']);
    const attributes = parserFor(field({ kind: 'record' }));
    expect(attributes('b:=2', attributes('a=1', undefined))).toEqual({ a: '1', b: 2 });
  });

  it('checks numbers and turns "" into null only where null is allowed', () => {
    expect(parserFor(field({ kind: 'integer' }))('20', undefined)).toBe(20);
    expect(() => parserFor(field({ kind: 'integer' }))('2.5', undefined)).toThrow(InvalidArgumentError);
    expect(parserFor(field({ kind: 'number' }))('2.5', undefined)).toBe(2.5);
    expect(parserFor(field({ kind: 'boolean' }))('false', undefined)).toBe(false);
    expect(() => parserFor(field({ kind: 'boolean' }))('no', undefined)).toThrow(InvalidArgumentError);
    expect(parserFor(field({ kind: 'string' }))('', undefined)).toBe('');
    expect(typeof parserFor(field({ kind: 'string', nullable: true }))('', undefined)).toBe('symbol');
  });
});

describe('the SDK behind each command', () => {
  it('finds a method of the client for every operation the CLI has', () => {
    const client = new Convo({ apiKey: 'convo_sk_test', baseUrl: 'http://127.0.0.1:9/v1' });
    for (const id of Object.keys(OPERATION_COMMANDS) as (keyof typeof OPERATION_COMMANDS)[]) {
      expect(typeof sdkMethod(client, SDK_METHODS[id]), id).toBe('function');
    }
  });
});

describe('the program', () => {
  it('documents the exit codes and every group in --help', async () => {
    const { terminal, stdout } = testTerminal();
    expect(await run(['--help'], terminal)).toBe(0);
    for (const group of ['conversations', 'messages', 'contacts', 'tags', 'orders', 'login', 'logout'])
      expect(stdout.text).toContain(group);
    expect(stdout.text).toMatch(/Exit codes:[\s\S]*3 +authentication[\s\S]*6 +server or network/);
  });

  // Builds the help of every operation in turn: seconds on a busy machine, past vitest's default 5 s.
  it('has a command, with complete help, for every operation', async () => {
    for (const { command } of Object.values(OPERATION_COMMANDS)) {
      const { terminal, stdout } = testTerminal();
      expect(await run([...command.split(' '), '--help'], terminal), command).toBe(0);
      expect(stdout.text).toContain(`Usage: convo ${command}`);
      expect(stdout.text).toContain('--json');
    }
    const { terminal, stdout } = testTerminal();
    await run(['orders', 'create', '--help'], terminal);
    expect(stdout.text).toContain('--item <name:quantity:unit_amount>');
    expect(stdout.text).toContain('--contact <id>');
    expect(stdout.text).toContain('--body <json>');
  }, 60_000);

  it('exits 2 on usage errors, with one line on stderr', async () => {
    const cases = [
      ['contacts', 'lis'],
      ['contacts', 'list', '--nope'],
      ['contacts', 'list', '--limit', 'many'],
      ['conversations', 'list', '--status', 'closed'],
      ['contacts', 'get'],
      ['contacts', 'create', '--name', 'Ana'],
      ['contacts', 'create', '--phone', '+14155550123', '--body', '{nope'],
      ['orders', 'create', '--contact', 'ct_1', '--currency', 'BRL', '--item', 'Hat'],
    ];
    for (const argv of cases) {
      const { terminal, stderr } = testTerminal({
        env: { CONVO_API_KEY: 'convo_sk_test', CONVO_BASE_URL: 'http://127.0.0.1:9/v1' },
      });
      expect(await run(argv, terminal), argv.join(' ')).toBe(EXIT_CODES.usage);
      expect(stderr.text, argv.join(' ')).toMatch(/^convo: [^\n]+\n$/);
    }
  });

  it('names what is missing', async () => {
    const { terminal, stderr } = testTerminal({ env: { CONVO_API_KEY: 'convo_sk_test' } });
    await run(['orders', 'create', '--currency', 'BRL'], terminal);
    expect(stderr.text).toBe('convo: missing --contact, --item (or give "contact_id", "items" in --body)\n');
  });

  it('exits 3 without an API key', async () => {
    const { terminal, stderr } = testTerminal({ env: { XDG_CONFIG_HOME: '/nonexistent-config' } });
    expect(await run(['tags', 'list'], terminal)).toBe(EXIT_CODES.auth);
    expect(stderr.text).toContain('no API key');
  });
});

describe('a stream operation', () => {
  it('prints each event of `events stream` as one JSON line, resuming after the last one when the stream drops', async () => {
    const [one, two] = [testEvent(1), testEvent(2, 'order.placed')];
    const stream = await testServer((_request, response, index) => {
      if (index === 2) return unauthorized(response);
      openEventStream(response);
      response.end(index === 0 ? one.block : two.block);
    });
    try {
      const { terminal, stdout } = testTerminal({
        env: { CONVO_API_KEY: 'convo_sk_test', CONVO_BASE_URL: `${stream.url}/v1` },
      });
      const code = await run(
        ['events', 'stream', '--type', 'message.received,order.placed', '--starting-after', 'evt_0'],
        terminal,
      );
      // The stream runs until interrupted; a revoked key (401) ends it here.
      expect(code).toBe(EXIT_CODES.auth);
      expect(stdout.text).toBe(`${JSON.stringify(one.event)}\n${JSON.stringify(two.event)}\n`);
      expect(stream.seen.map((request) => request.url.pathname)).toEqual(Array(3).fill('/v1/events/stream'));
      expect(stream.seen[0]?.url.searchParams.get('type')).toBe('message.received,order.placed');
      expect(stream.seen[0]?.url.searchParams.get('starting_after')).toBe('evt_0');
      expect(stream.seen.map((request) => request.headers['last-event-id'])).toEqual([undefined, 'evt_1', 'evt_2']);
    } finally {
      await stream.close();
    }
  });
});
