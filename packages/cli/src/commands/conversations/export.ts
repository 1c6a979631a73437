import type { Command } from 'commander';
import { openClient } from '../../client.js';
import { type CommandContext, type CommonOptions, addCommonOptions, fieldValues, optionFor } from '../../operation-commands.js';
import { writeJsonLines } from '../../output.js';
import { createProgress, progressEnabled } from '../../progress.js';
import { writeOut } from '../../terminal.js';

/** The API's largest page, so an export takes as few requests as it can. */
const EXPORT_PAGE_SIZE = 100;

/** `convo conversations export [filters] > out.jsonl`: every matching conversation, one JSON object per line. */
export function addExportCommand(group: Command, context: CommandContext): void {
  const spec = context.specs['conversations.list'];
  const command = group
    .command('export')
    .summary('Write every matching conversation to stdout as JSON Lines')
    .description(
      [
        'Write every matching conversation to stdout as JSON Lines, one conversation per line, in the order of `conversations list`. A progress bar shows on stderr when it is a terminal (not with --json).',
        'Example: convo conversations export --status active > active.jsonl',
      ].join('\n\n'),
    );
  const filters = spec.query
    .filter((field) => field.name !== 'offset')
    .map((field) => {
      const option = optionFor(
        field.name === 'limit' ? { ...field, description: `Records per request, 1 to ${EXPORT_PAGE_SIZE}; default: ${EXPORT_PAGE_SIZE}` } : field,
      );
      command.addOption(option.helpGroup('Filters:'));
      return { field, key: option.attributeName() };
    });
  addCommonOptions(command);

  command.action(async (options: CommonOptions & Record<string, unknown>) => {
    const { terminal } = context;
    const query = { limit: EXPORT_PAGE_SIZE, ...fieldValues(options, filters) };

    const client = await openClient(options, terminal);
    const progress = createProgress(terminal.stderr, { label: 'Exporting conversations', enabled: progressEnabled(options, terminal.stderr) });
    const conversations = client.conversations.list(query);
    progress.setTotal((await conversations).total);
    const count = await writeJsonLines(terminal.stdout, conversations, () => progress.tick());
    progress.done();
    if (progressEnabled(options, terminal.stderr)) await writeOut(terminal.stderr, `Exported ${count} conversations.\n`);
  });
}
