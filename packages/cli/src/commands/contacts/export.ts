import type { Contact } from '@convo/sdk';
import { type Command, Option } from 'commander';
import { openClient } from '../../client.js';
import type { ExportFormat } from './export-file.js';
import {
  type CommandContext,
  type CommonOptions,
  EXPORT_PAGE_SIZE,
  addCommonOptions,
  addFieldOptions,
  fieldValues,
} from '../../operation-commands.js';
import { writeJsonLines } from '../../output.js';
import { createProgress, progressEnabled } from '../../progress.js';
import { writeOut } from '../../terminal.js';

/** `convo contacts export [filters] [--format csv] > contacts.jsonl`: what `contacts import` reads back. */
export function addContactsExportCommand(group: Command, context: CommandContext): void {
  const spec = context.specs['contacts.list'];
  const command = group
    .command('export')
    .summary('Write every matching contact to stdout, as `contacts import` reads it')
    .description(
      [
        'Write every matching contact to stdout, newest first: JSON Lines (the default) with one `contacts create` body per line (name, phone, email, tags, attributes), or CSV with the columns of `contacts import` (name, phone, email, tags joined by ;, attr.<key> for every attribute). `contacts import` reads either back: JSON Lines as it was; CSV with attribute values as text (numbers and booleans too).',
        'Examples:\n  convo contacts export --tag vip > vip.jsonl\n  convo contacts export --format csv > contacts.csv',
      ].join('\n\n'),
    )
    .addOption(new Option('--format <format>', 'jsonl (default) or csv').choices(['jsonl', 'csv']).default('jsonl'));
  const filters = addFieldOptions(
    command,
    spec.query.filter((field) => field.name !== 'offset' && field.name !== 'limit'),
    'Filters:',
  );
  addCommonOptions(command);

  command.action(async (options: CommonOptions & { format: ExportFormat } & Record<string, unknown>) => {
    const { terminal } = context;
    const { contactsCsv, importableBody } = await import('./export-file.js');
    const progress = createProgress(terminal.stderr, {
      label: 'Exporting contacts',
      enabled: progressEnabled(options, terminal.stderr),
    });
    const client = await openClient(options, terminal, { notify: (line) => progress.log(line) });
    const contacts = client.contacts.list({ limit: EXPORT_PAGE_SIZE, ...fieldValues(options, filters) });
    progress.setTotal((await contacts).total);
    let count: number;
    if (options.format === 'csv') {
      // CSV needs every contact's attribute keys for its header, so it is written at the end.
      const kept: Contact[] = [];
      for await (const contact of contacts) {
        kept.push(contact);
        progress.tick();
      }
      await writeOut(terminal.stdout, contactsCsv(kept));
      count = kept.length;
    } else {
      count = await writeJsonLines(terminal.stdout, mapAsync(contacts, importableBody), () => progress.tick());
    }
    progress.done();
    if (progressEnabled(options, terminal.stderr)) await writeOut(terminal.stderr, `Exported ${count} contacts.\n`);
  });
}

async function* mapAsync<T, U>(records: AsyncIterable<T>, map: (record: T) => U): AsyncIterable<U> {
  for await (const record of records) yield map(record);
}
