import type { Event } from '@convo/sdk';
import { type Command, Option } from 'commander';
import { version } from '../../../package.json';
import { openClient } from '../../client.js';
import { UsageError } from '../../errors.js';
import {
  type CommandContext,
  type CommonOptions,
  addCommonOptions,
  untilInterrupted,
} from '../../operation-commands.js';
import { writeJsonLines } from '../../output.js';
import { writeOut } from '../../terminal.js';
import { type ForwardResult, forwardEvent, newSigningSecret } from './deliveries.js';

interface ListenOptions extends CommonOptions {
  forwardTo?: string;
  events?: string;
  printJson?: boolean;
}

/**
 * `convo listen --forward-to URL`: the account's events as they happen (the SDK's `events.stream`,
 * which reconnects with Last-Event-ID), each POSTed to a local handler as a Standard Webhooks
 * delivery signed with a secret made for this run, so a handler is tried without a public address.
 */
export function addListenCommand(program: Command, context: CommandContext): void {
  const { terminal } = context;
  const command = program
    .command('listen')
    .summary('Forward events as they happen to a local webhook handler, signed')
    .description(
      [
        'Follow the events as they happen and POST each to --forward-to as a webhook delivery (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature), signed with a secret printed at the start and made new for each run. One line per event: when, its type and id, and what the handler answered (status and time, or why it could not be reached: listening goes on). A dropped connection is resumed after the last event, so none is skipped or sent twice. Ctrl-C stops.',
        'Examples:\n  convo listen --forward-to http://localhost:4242/webhooks\n  convo listen --forward-to http://localhost:4242/webhooks --events message.received,message.updated\n  convo listen --print-json --events order.placed',
      ].join('\n\n'),
    )
    .addOption(new Option('--forward-to <url>', 'the handler to POST each event to').conflicts('printJson'))
    .addOption(new Option('--events <types>', 'only events of these types, comma-separated (default: every type)'))
    .addOption(new Option('--print-json', 'print each event as a line of JSON instead of forwarding it'));
  addCommonOptions(command);

  command.action(async (options: ListenOptions) => {
    const forwardTo = options.forwardTo;
    if (!forwardTo && !options.printJson) throw new UsageError('give --forward-to <url> or --print-json');
    if (forwardTo && !/^https?:$/.test(urlProtocol(forwardTo)))
      throw new UsageError(`--forward-to must be an http(s) URL, got "${forwardTo}"`);
    const client = await openClient(options, terminal, {
      onRetry: (retry) => {
        // A 429's wait is told by the client's own notice.
        if (retry.error.code !== 'rate_limited')
          terminal.stderr.write(
            `convo: ${retry.error.message}; reconnecting in ${(retry.delayMs / 1000).toFixed(1)} s\n`,
          );
      },
    });
    const params = options.events ? { type: options.events } : {};

    await untilInterrupted(async (signal) => {
      const events = client.events.stream(params, { signal });
      if (!forwardTo) {
        await writeJsonLines(terminal.stdout, events);
        return;
      }
      const secret = newSigningSecret();
      await writeOut(
        terminal.stdout,
        `Webhook signing secret for this run: ${secret}\nForwarding events to ${forwardTo} (Ctrl-C to stop)\n`,
      );
      for await (const event of events) {
        const result = await forwardEvent(forwardTo, event, secret, { userAgent: `convo-cli/${version}`, signal });
        await writeOut(terminal.stdout, deliveryLine(event, result));
      }
    });
  });
}

const urlProtocol = (text: string): string => {
  try {
    return new URL(text).protocol;
  } catch {
    return '';
  }
};

/** `2026-05-04T10:00:00.000Z  message.received  evt_…  → 200 (12 ms)`. */
export function deliveryLine(event: Event, result: ForwardResult, now = new Date()): string {
  const answer = 'status' in result ? String(result.status) : `error: ${result.error}`;
  return `${now.toISOString()}  ${event.type}  ${event.id}  → ${answer} (${result.ms} ms)\n`;
}
