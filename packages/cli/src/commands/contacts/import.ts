import { readFileSync } from 'node:fs';
import type { Contact, Convo } from '@convo/sdk';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { openClient } from '../../client.js';
import { CliError, UsageError, isConvoError, messageOf } from '../../errors.js';
import { type CommandContext, type CommonOptions, addCommonOptions } from '../../operation-commands.js';
import { formatJson, outputFormatOf } from '../../output.js';
import { createProgress, progressEnabled } from '../../progress.js';
import { writeOut } from '../../terminal.js';
import type { ImportFormat, ImportRow } from './import-file.js';

export type ImportOutcome = 'created' | 'updated' | 'unchanged';
export interface ImportSummary {
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
}

const DEFAULT_CONCURRENCY = 4;

export function addImportCommand(group: Command, context: CommandContext): void {
  const command = group
    .command('import')
    .argument('<file>', 'a .csv or .jsonl file')
    .summary('Create or update contacts from a CSV or JSON Lines file')
    .description(
      [
        'Create or update contacts from a CSV or JSON Lines file.',
        'CSV: a header row, then one contact per row. Columns: name, phone, email, tags (separated by ; or |), and attr.<key> for each attribute. JSON Lines: one `contacts create` body per line.',
        "A contact whose phone number already exists is updated with the row's fields, or left unchanged when they already match, so running the same file again creates no duplicates. Rows that fail are reported on stderr with their line number and the import goes on. A summary (created, updated, unchanged, failed) is printed at the end; the exit code is 1 when any row failed. A progress bar shows on stderr when it is a terminal (not with --json). When the account's rate limit is reached, the import waits until the API lets it go on, and says so on stderr.",
        'Example: convo contacts import contacts.csv',
      ].join('\n\n'),
    )
    .addOption(
      new Option('--format <format>', "the file's format when its extension does not say").choices(['csv', 'jsonl']),
    )
    .addOption(
      new Option('--concurrency <n>', `requests in flight at once (default: ${DEFAULT_CONCURRENCY})`).argParser(
        positiveInteger,
      ),
    );
  addCommonOptions(command);

  command.action(async (file: string, options: CommonOptions & { format?: ImportFormat; concurrency?: number }) => {
    const { terminal } = context;
    const { formatOfFile, parseContactsFile } = await import('./import-file.js');
    const format = options.format ?? formatOfFile(file);
    if (!format) throw new UsageError(`cannot tell the format of ${file}: name it .csv or .jsonl, or pass --format`);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
    }
    const rows = parseContactsFile(text, format);
    const progress = createProgress(terminal.stderr, {
      label: 'Importing contacts',
      total: rows.length,
      enabled: progressEnabled(options, terminal.stderr),
    });
    const client = await openClient(options, terminal, { notify: (line) => progress.log(line) });
    const summary = await importContacts(client, rows, {
      concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
      onRow: (row, result) => {
        if (typeof result !== 'string') progress.log(`convo: line ${row.line}: ${result.error}`);
        progress.tick();
      },
    });
    progress.done();

    if (outputFormatOf(options, terminal.stdout) === 'json') await writeOut(terminal.stdout, formatJson(summary));
    else {
      await writeOut(
        terminal.stdout,
        `Created ${summary.created}, updated ${summary.updated}, unchanged ${summary.unchanged}, failed ${summary.failed} (${rows.length} rows).\n`,
      );
    }
    if (summary.failed > 0) throw new CliError(`${summary.failed} of ${rows.length} rows failed`);
  });
}

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('Must be a positive integer.');
  return Number(value);
}

/**
 * Sends each row, a few at a time. A 400 or 404 fails only its row; any other error (auth,
 * rate limit after retries, server, network) stops the import, since every row would fail alike.
 */
export async function importContacts(
  client: Convo,
  rows: readonly ImportRow[],
  options: { concurrency: number; onRow?: (row: ImportRow, result: ImportOutcome | { error: string }) => void },
): Promise<ImportSummary> {
  const summary: ImportSummary = { created: 0, updated: 0, unchanged: 0, failed: 0 };
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (!stopped && next < rows.length) {
      const row = rows[next++] as (typeof rows)[number];
      let result: ImportOutcome | { error: string };
      if (row.error !== undefined || row.body === undefined) result = { error: row.error ?? 'empty row' };
      else {
        try {
          result = await importContact(client, row.body);
        } catch (error) {
          if (!(isConvoError(error) && (error.code === 'bad_request' || error.code === 'not_found'))) {
            stopped = true;
            throw error;
          }
          result = { error: messageOf(error) };
        }
      }
      if (typeof result === 'string') summary[result]++;
      else summary.failed++;
      options.onRow?.(row, result);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency, rows.length)) }, worker));
  return summary;
}

/**
 * Creates the contact; when its phone is taken, brings the existing contact in line with the row
 * instead. A row's attributes are merged into the contact's (null removes one), as its other
 * fields are: what the row leaves out stays as it is.
 */
export async function importContact(client: Convo, body: Record<string, unknown>): Promise<ImportOutcome> {
  try {
    await client.contacts.create(withoutRemovedAttributes(body) as Parameters<Convo['contacts']['create']>[0]);
    return 'created';
  } catch (error) {
    const existingId =
      isConvoError(error) && error.details?.constraint === 'unique' && error.details.field === 'phone'
        ? error.details.existing_id
        : undefined;
    if (!existingId) throw error;
    const existing = await client.contacts.retrieve(existingId);
    const changes = changedFields(existing, body);
    if (Object.keys(changes).length === 0) return 'unchanged';
    await client.contacts.update(existingId, changes);
    return 'updated';
  }
}

/** A new contact's body: attributes the row removes (null) are simply not there. */
function withoutRemovedAttributes(body: Record<string, unknown>): Record<string, unknown> {
  if (!isRecord(body.attributes)) return body;
  return {
    ...body,
    attributes: Object.fromEntries(Object.entries(body.attributes).filter(([, value]) => value !== null)),
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The fields of `body` that differ from the contact (tags as a set), as a PATCH body. Attributes
 * are merged: the row's set or replace the contact's, null removes one, the others stay (a PATCH
 * replaces the whole object, so the merged object is sent).
 */
export function changedFields(contact: Contact, body: Record<string, unknown>): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (key === 'phone') continue;
    const current = (contact as unknown as Record<string, unknown>)[key];
    const wanted = key === 'attributes' && isRecord(value) ? mergedAttributes(contact.attributes, value) : value;
    if (!sameValue(key, current, wanted)) changes[key] = wanted;
  }
  return changes;
}

function mergedAttributes(current: Contact['attributes'], row: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(row)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}

function sameValue(key: string, current: unknown, wanted: unknown): boolean {
  if (key === 'tags' && Array.isArray(current) && Array.isArray(wanted)) {
    const a = [...new Set(current)].sort();
    const b = [...new Set(wanted)].sort();
    return a.length === b.length && a.every((tag, i) => tag === b[i]);
  }
  return canonical(current ?? null) === canonical(wanted ?? null);
}

/** JSON with object keys sorted, to compare values regardless of key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
