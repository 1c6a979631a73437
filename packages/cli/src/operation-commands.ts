import { constants, createWriteStream, readFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { extname } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Convo, OperationId } from '@convo/sdk';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { openClient } from './client.js';
import type { ConnectionFlags } from './config.js';
import { CliError, UsageError } from './errors.js';
import type { FieldSpec, OperationSpec, ScalarKind } from './operation-spec.js';
import { outputFormatOf, printResult, writeJsonLines } from './output.js';
import type { Terminal } from './terminal.js';

/**
 * The generic builder: one command per operation of the endpoint table, its arguments and
 * options derived from the operation's schemas (see operation-spec.ts), its action one SDK call.
 */

/** How an operation appears on the command line. */
export interface OperationCommand {
  /** The words after `convo`: `contacts tag add`. */
  command: string;
  /** Body fields taken as arguments after the path parameters (`contacts tag add ID TAG`). */
  positionalBody?: readonly string[];
  /** The columns of a list's table (dot paths); by default the records' scalar fields. */
  columns?: readonly string[];
  /** Printed on a terminal when the operation answers no content (204). */
  done?: string;
  /**
   * Message types sent from a file: `--image PATH` uploads PATH (`POST /v1/files`) and sends it as the
   * body's `type` with `media.file_id`.
   */
  mediaFiles?: readonly string[];
}

export interface CommandContext {
  terminal: Terminal;
  specs: Record<OperationId, OperationSpec>;
}

/** The API's largest page: exports ask for it, to take as few requests as they can. */
export const EXPORT_PAGE_SIZE = 100;

/** Options every command that calls the API takes. */
export interface CommonOptions extends ConnectionFlags {
  json?: boolean;
}

/**
 * `--json`, `--api-key`, `--base-url`, `--profile`, under their own heading in help. The program
 * takes them too, before the command (`convo --profile staging tags list`): see program.ts.
 */
export function addCommonOptions(command: Command): Command {
  const group = 'Global options:';
  return command
    .addOption(
      new Option('--json', "print the API's JSON (the default when stdout is not a terminal)").helpGroup(group),
    )
    .addOption(
      new Option('--api-key <key>', 'API key (else CONVO_API_KEY, else the profile from `convo login`)').helpGroup(
        group,
      ),
    )
    .addOption(
      new Option('--base-url <url>', "API base URL ending in /v1 (else CONVO_BASE_URL, else the profile's)").helpGroup(
        group,
      ),
    )
    .addOption(
      new Option('--profile <name>', 'profile saved by `convo login` (else CONVO_PROFILE, else "default")').helpGroup(
        group,
      ),
    );
}

/** Finds the subcommand `name` of `parent`, creating it (as a plain group) when missing. */
export function subcommand(parent: Command, name: string, summary?: string): Command {
  const existing = parent.commands.find((c) => c.name() === name);
  if (existing) return summary ? existing.summary(summary).description(summary) : existing;
  const created = parent.command(name);
  const text = summary ?? `${name[0]?.toUpperCase()}${name.slice(1)}`;
  return created.summary(text).description(text);
}

/** Adds the command of one operation under `root`, creating its groups as needed. */
export function addOperationCommand(
  root: Command,
  id: OperationId,
  naming: OperationCommand,
  context: CommandContext,
): Command {
  const spec = context.specs[id];
  const words = naming.command.split(' ');
  let parent = root;
  for (const word of words.slice(0, -1)) parent = subcommand(parent, word);
  const command = parent.command(words[words.length - 1] as string);
  command
    .summary(spec.summary)
    .description(spec.description ? `${spec.summary}.\n\n${spec.description}` : `${spec.summary}.`);

  for (const param of spec.pathParams) command.argument(`<${param.name}>`, param.description);
  const positional = (naming.positionalBody ?? []).map((name) => {
    const field = spec.body?.find((f) => f.name === name);
    if (!field) throw new Error(`${id}: positional body field "${name}" is not in the body schema`);
    command.argument(`<${field.option}>`, field.description);
    return field;
  });

  const queryOptions = addFieldOptions(command, spec.query, spec.list ? 'Filters and paging:' : 'Query options:');
  const bodyFields = (spec.body ?? []).filter((f) => !positional.includes(f));
  const bodyOptions = addFieldOptions(command, bodyFields, 'Body options:');
  if (bodyFields.length > 0) {
    command.addOption(
      new Option(
        '--body <json>',
        'the request body as JSON, @FILE or - for stdin; the options above override its fields',
      ).helpGroup('Body options:'),
    );
  }
  if (spec.upload) {
    command.argument('<path>', 'the file to upload');
    command.addOption(new Option('--filename <name>', "the name to keep; by default the path's last part"));
    command.addOption(new Option('--type <mime-type>', 'its media type; by default guessed from its extension'));
  }
  if (spec.download) command.addOption(new Option('--output <path>', 'where to write the bytes; by default stdout'));
  for (const type of naming.mediaFiles ?? [])
    command.addOption(
      new Option(`--${type} <path>`, `upload the file at PATH and send it as the message's ${type}`).helpGroup(
        'Body options:',
      ),
    );
  if (spec.list)
    command.addOption(
      new Option('--all', 'page through every record and print JSON Lines').helpGroup('Filters and paging:'),
    );
  addCommonOptions(command);

  command.action(async (...args: unknown[]) => {
    const values = args.slice(0, spec.pathParams.length + positional.length + (spec.upload ? 1 : 0)) as string[];
    const options = (args[values.length] ?? {}) as CommonOptions & { all?: boolean; body?: string } & Record<
        string,
        unknown
      >;
    const { terminal } = context;

    const query = fieldValues(options, queryOptions);
    let body: Record<string, unknown> | undefined;
    if (bodyFields.length > 0) {
      const given = {
        ...(options.body === undefined ? {} : await readBodyOption(options.body, terminal)),
        ...fieldValues(options, bodyOptions),
      };
      body = given;
      const missing = bodyFields.filter((f) => f.required && given[f.name] === undefined);
      if (missing.length > 0) {
        const list = missing.map((f) => `--${f.option}`).join(', ');
        throw new UsageError(`missing ${list} (or give ${missing.map((f) => `"${f.name}"`).join(', ')} in --body)`);
      }
    }

    // The SDK's convention: path parameters, then positional body fields, then the query or body object.
    const callArgs: unknown[] = [...values];
    if (spec.upload) callArgs.splice(0, callArgs.length, await fileUpload(values[0] as string, options));
    if (spec.query.length > 0) callArgs.push(query);
    if (body !== undefined) callArgs.push(body);

    const media = (naming.mediaFiles ?? []).filter((type) => options[type] !== undefined);
    if (media.length > 1) throw new UsageError(`give one of ${media.map((type) => `--${type}`).join(', ')}`);

    const client = await openClient(options, terminal);
    const [mediaType] = media;
    if (mediaType !== undefined && body !== undefined) {
      const path = options[mediaType] as string;
      // An .mp4 or .ogg holds sound or pictures: the flag says which.
      const extension = extname(path).slice(1).toLowerCase();
      const type = mediaType === 'audio' && extension === 'mp4' ? { type: 'audio/mp4' } : {};
      const file = await client.files.create(await fileUpload(path, type));
      body.type = mediaType;
      body.media = { file_id: file.id };
    }
    const { SDK_METHODS } = await import('@convo/sdk');
    const methodPath = (SDK_METHODS as Partial<Record<OperationId, string>>)[id];
    if (!methodPath) throw new CliError(`this version of @convo/sdk cannot call ${id}`);
    const method = sdkMethod(client, methodPath);
    if (spec.stream) {
      await untilInterrupted((signal) => writeJsonLines(terminal.stdout, method(...callArgs, { signal }) as never));
      return;
    }
    const result = method(...callArgs);

    if (spec.download) {
      await writeBytes(
        await (result as Promise<ReadableStream<Uint8Array>>),
        options.output as string | undefined,
        terminal,
      );
      return;
    }
    if (spec.list && options.all) {
      await writeJsonLines(terminal.stdout, result as AsyncIterable<unknown>);
      return;
    }
    await printResult(terminal.stdout, await result, {
      format: outputFormatOf(options, terminal.stdout),
      list: spec.list,
      columns: naming.columns,
      emptyMessage: naming.done ?? 'Done.',
    });
  });
  return command;
}

/**
 * Runs `work` until it ends or the process is interrupted (Ctrl-C, SIGTERM), which aborts its
 * signal: a stream then closes its connection and the command exits 0, as at its natural end.
 */
export async function untilInterrupted<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await work(stop.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** The file at `path` as the SDK uploads it (read as it is sent; its type, unless given, from its extension). */
async function fileUpload(path: string, options: Record<string, unknown>) {
  try {
    await access(path, constants.R_OK);
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  const { filename, type } = options as { filename?: string; type?: string };
  return { file: path, ...(filename ? { filename } : {}), ...(type ? { type } : {}) };
}

/** A download's bytes to `output` (a path) or to stdout. */
async function writeBytes(bytes: ReadableStream<Uint8Array>, output: string | undefined, terminal: Terminal) {
  const chunks = Readable.fromWeb(bytes as import('node:stream/web').ReadableStream<Uint8Array>);
  if (output && output !== '-') await pipeline(chunks, createWriteStream(output));
  else for await (const chunk of chunks) terminal.stdout.write(chunk);
}

/** `contacts.tags.add` → `client.contacts.tags.add`, bound to its resource. */
export function sdkMethod(client: Convo, path: string): (...args: unknown[]) => unknown {
  const names = path.split('.');
  let owner: unknown = client;
  for (const name of names.slice(0, -1)) owner = (owner as Record<string, unknown>)[name];
  const method = (owner as Record<string, unknown> | undefined)?.[names[names.length - 1] as string];
  if (typeof method !== 'function') throw new Error(`The SDK has no method ${path}`);
  return (method as (...args: unknown[]) => unknown).bind(owner);
}

/** The commander option of a schema field: flag, help, choices and the parser of its values. */
/** Adds an option for each field under the help heading `group`; fieldValues reads them back. */
export function addFieldOptions(
  command: Command,
  fields: readonly FieldSpec[],
  group: string,
): { field: FieldSpec; key: string }[] {
  return fields.map((field) => {
    const option = optionFor(field).helpGroup(group);
    command.addOption(option);
    return { field, key: option.attributeName() };
  });
}

export function optionFor(field: FieldSpec): Option {
  const description = `${field.description}${field.required ? `${field.description ? ' ' : ''}(required)` : ''}`;
  // A boolean alone means true; `--flag false` sends false.
  const flags =
    field.kind === 'boolean' ? `--${field.option} [true|false]` : `--${field.option} <${field.placeholder}>`;
  const option = new Option(flags, description);
  if (field.kind === 'string' && field.choices && !field.nullable) return option.choices(field.choices);
  return option.argParser(parserFor(field));
}

type Parser = (value: string, previous: unknown) => unknown;

/** What a parser returns for `""` on a nullable field (commander would turn a plain null into ""). */
const NULL_VALUE = Symbol('null');

/** The fields given on the command line, by their API names. */
export function fieldValues(
  options: Record<string, unknown>,
  fields: readonly { field: FieldSpec; key: string }[],
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const { field, key } of fields) {
    const value = options[key];
    if (value !== undefined) values[field.name] = value === NULL_VALUE ? null : value;
  }
  return values;
}

export function parserFor(field: FieldSpec): Parser {
  switch (field.kind) {
    case 'string':
      return (value) => {
        if (field.nullable && value === '') return NULL_VALUE;
        if (field.choices && !field.choices.includes(value))
          throw new InvalidArgumentError(`Allowed choices are ${field.choices.join(', ')}.`);
        return value;
      };
    case 'integer':
    case 'number':
    case 'boolean':
      return (value) => (field.nullable && value === '' ? NULL_VALUE : parseScalar(value, field.kind as ScalarKind));
    case 'strings':
      return (value, previous) => {
        if (field.choices && !field.choices.includes(value))
          throw new InvalidArgumentError(`Allowed choices are ${field.choices.join(', ')}.`);
        return [...((previous as string[] | undefined) ?? []), value];
      };
    case 'record':
      return (value, previous) => ({
        ...((previous as Record<string, unknown> | undefined) ?? {}),
        ...parseKeyValue(value),
      });
    case 'objects':
      return (value, previous) => [
        ...((previous as unknown[] | undefined) ?? []),
        parseItem(value, field.itemFields ?? []),
      ];
    case 'json-items':
      return (value, previous) => [...((previous as unknown[] | undefined) ?? []), parseJson(value)];
    case 'json':
      return (value) => parseJson(value);
  }
}

function parseScalar(value: string, kind: ScalarKind): unknown {
  switch (kind) {
    case 'string':
      return value;
    case 'integer':
      if (!/^[+-]?\d+$/.test(value.trim())) throw new InvalidArgumentError('Must be an integer.');
      return Number(value);
    case 'number': {
      const number = Number(value);
      if (value.trim() === '' || !Number.isFinite(number)) throw new InvalidArgumentError('Must be a number.');
      return number;
    }
    case 'boolean':
      if (value === 'true') return true;
      if (value === 'false') return false;
      throw new InvalidArgumentError('Must be true or false.');
  }
}

/** `tier=gold` → `{tier: "gold"}` (always a string); `visits:=3` → `{visits: 3}` (the value as JSON). */
export function parseKeyValue(text: string): Record<string, unknown> {
  const json = /^([^=:]+):=(.*)$/s.exec(text);
  if (json) return { [json[1] as string]: parseJson(json[2] as string) };
  const plain = /^([^=]+)=(.*)$/s.exec(text);
  if (!plain) throw new InvalidArgumentError('Expected key=value (or key:=JSON).');
  return { [plain[1] as string]: plain[2] as string };
}

/**
 * `Denim jacket:1:18990` → `{name: "Denim jacket", quantity: 1, unit_amount: 18990}`: the fields
 * in schema order, split from the right so that the first may hold colons. A JSON object is taken as is.
 */
export function parseItem(
  text: string,
  fields: readonly { name: string; kind: ScalarKind }[],
): Record<string, unknown> {
  if (text.trim().startsWith('{')) return parseJson(text) as Record<string, unknown>;
  const parts = text.split(':');
  if (parts.length < fields.length) {
    throw new InvalidArgumentError(`Expected ${fields.map((f) => f.name).join(':')}.`);
  }
  const tail = parts.splice(parts.length - (fields.length - 1));
  const values = [parts.join(':'), ...tail];
  return Object.fromEntries(fields.map((f, i) => [f.name, parseScalar(values[i] as string, f.kind)]));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`Not valid JSON: ${(error as Error).message}.`);
  }
}

/** `--body`: inline JSON, `@path` to read a file, `-` for stdin. Must be a JSON object. */
export async function readBodyOption(value: string, terminal: Terminal): Promise<Record<string, unknown>> {
  let text = value;
  if (value === '-') text = await readAll(terminal.stdin);
  else if (value.startsWith('@')) {
    try {
      text = readFileSync(value.slice(1), 'utf8');
    } catch (error) {
      throw new UsageError(`--body: cannot read ${value.slice(1)}: ${(error as Error).message}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError('--body must be a JSON object');
  return parsed as Record<string, unknown>;
}

export async function readAll(stream: AsyncIterable<Buffer | string>): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
  return text;
}
