import { type Command, Option } from 'commander';
import type { Conversation, Convo, Message } from '@convo/sdk';
import { openClient } from '../../client.js';
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

/** `convo conversations export [filters] > out.jsonl`: every matching conversation, one JSON object per line. */
export function addExportCommand(group: Command, context: CommandContext): void {
  const spec = context.specs['conversations.list'];
  const command = group
    .command('export')
    .summary('Write every matching conversation to stdout as JSON Lines')
    .description(
      [
        'Write every matching conversation to stdout as JSON Lines, one conversation per line, in the order of `conversations list`; with --messages, each with all its messages (oldest first) as `messages`. A progress bar shows on stderr when it is a terminal (not with --json).',
        'Examples:\n  convo conversations export --status active > active.jsonl\n  convo conversations export --status resolved --messages > transcripts.jsonl',
      ].join('\n\n'),
    )
    .addOption(
      new Option(
        '--messages',
        "include each conversation's messages, oldest first (one more request per 100 messages)",
      ),
    );
  const filters = addFieldOptions(
    command,
    spec.query
      .filter((field) => field.name !== 'offset')
      .map((field) =>
        field.name === 'limit'
          ? { ...field, description: `Records per request, 1 to ${EXPORT_PAGE_SIZE}; default: ${EXPORT_PAGE_SIZE}` }
          : field,
      ),
    'Filters:',
  );
  addCommonOptions(command);

  command.action(async (options: CommonOptions & { messages?: boolean } & Record<string, unknown>) => {
    const { terminal } = context;
    const query = { limit: EXPORT_PAGE_SIZE, ...fieldValues(options, filters) };

    const progress = createProgress(terminal.stderr, {
      label: 'Exporting conversations',
      enabled: progressEnabled(options, terminal.stderr),
    });
    const client = await openClient(options, terminal, { notify: (line) => progress.log(line) });
    const conversations = client.conversations.list(query);
    progress.setTotal((await conversations).total);
    const records = options.messages ? withMessages(client, conversations) : conversations;
    const count = await writeJsonLines(terminal.stdout, records, () => progress.tick());
    progress.done();
    if (progressEnabled(options, terminal.stderr))
      await writeOut(terminal.stderr, `Exported ${count} conversations.\n`);
  });
}

/** Each conversation with all its messages, fetched as the conversation comes up. */
async function* withMessages(
  client: Convo,
  conversations: AsyncIterable<Conversation>,
): AsyncIterable<Conversation & { messages: Message[] }> {
  for await (const conversation of conversations) {
    const messages = await client.conversations.listMessages(conversation.id, { limit: EXPORT_PAGE_SIZE }).toArray();
    yield { ...conversation, messages };
  }
}
