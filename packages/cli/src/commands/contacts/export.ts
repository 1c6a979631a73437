import { type Command, Option } from 'commander';
import { openClient } from '../../client.js';
import { type CommandContext, type CommonOptions, EXPORT_PAGE_SIZE, addCommonOptions, fieldValues, optionFor } from '../../operation-commands.js';
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
  const filters = spec.query
    .filter((field) => field.name !== 'offset' && field.name !== 'limit')
    .map((field) => {
      const option = optionFor(field);
      command.addOption(option.helpGroup('Filters:'));
      return { field, key: option.attributeName() };
    });
  addCommonOptions(command);

  command.action(async (options: CommonOptions & { format: 'jsonl' | 'csv' } & Record<string, unknown>) => {
    const { terminal } = context;
    const { contactsCsv, importableBody } = await import('./export-file.js');
    const client = await openClient(options, terminal);
    const progress = createProgress(terminal.stderr, { label: 'Exporting contacts', enabled: progressEnabled(options, terminal.stderr) });
    const contacts = client.contacts.list({ limit: EXPORT_PAGE_SIZE, ...fieldValues(options, filters) });
    progress.setTotal((await contacts).total);
    let count = 0;
    // CSV needs every contact's attribute keys for its header, so it is written at the end.
    const kept = [];
    for await (const contact of contacts) {
      if (options.format === 'csv') kept.push(contact);
      else await writeOut(terminal.stdout, `${JSON.stringify(importableBody(contact))}\n`);
      progress.tick();
      count++;
    }
    if (options.format === 'csv') await writeOut(terminal.stdout, contactsCsv(kept));
    progress.done();
    if (progressEnabled(options, terminal.stderr)) await writeOut(terminal.stderr, `Exported ${count} contacts.\n`);
  });
}
