import type { EventType } from '@convo/sdk';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { openClient } from '../../client.js';
import {
  type CommandContext,
  type CommonOptions,
  addCommonOptions,
  untilInterrupted,
} from '../../operation-commands.js';
import { writeJsonLines } from '../../output.js';

const seconds = (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number of seconds above 0');
  return n;
};

/**
 * `convo events tail [--after EVT] [--type T] [--no-follow]`: the events as they are recorded, one
 * JSON object per line, oldest first: the catch-up from `--after` (by default from now on), then
 * every new one until interrupted. Paged with the list's `ending_before` cursor (SDK
 * `events.since` and `events.follow`), so no event is printed twice or skipped.
 */
export function addEventsTailCommand(group: Command, context: CommandContext): void {
  const types = context.specs['events.list'].query.find((field) => field.name === 'type')?.choices ?? [];
  const command = group
    .command('tail')
    .summary('Print events as they are recorded, as JSON Lines, oldest first')
    .description(
      [
        'Print the events recorded after --after (by default, from now on), oldest first, one JSON object per line; then keep printing new ones as they come, until interrupted (Ctrl-C), unless --no-follow. No event is printed twice or skipped, even while many arrive.',
        'Examples:\n  convo events tail --type message.received\n  convo events tail --after evt_01J… --no-follow > missed.jsonl',
      ].join('\n\n'),
    )
    .addOption(new Option('--after <event_id>', 'the newest event you have: print the ones after it'))
    .addOption(new Option('--type <type>', 'only events of this type').choices(types))
    .addOption(new Option('--no-follow', 'print the events recorded so far, then exit'))
    .addOption(new Option('--interval <seconds>', 'how often to look for new events').argParser(seconds).default(2));
  addCommonOptions(command);

  command.action(
    async (options: CommonOptions & { after?: string; type?: EventType; follow: boolean; interval: number }) => {
      const { terminal } = context;
      const client = await openClient(options, terminal);
      await untilInterrupted(async (signal) => {
        if (!options.follow) {
          const after = options.after ?? (await client.events.list({ limit: 1 })).data[0]?.id;
          if (after !== undefined)
            await writeJsonLines(
              terminal.stdout,
              client.events.since(after, options.type ? { type: options.type } : {}),
            );
          return;
        }
        await writeJsonLines(
          terminal.stdout,
          client.events.follow({
            ...(options.after ? { after: options.after } : {}),
            ...(options.type ? { type: options.type } : {}),
            intervalMs: options.interval * 1000,
            signal,
          }),
        );
      });
    },
  );
}
