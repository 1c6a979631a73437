import type { OperationId } from '@convo/sdk';
import { Command } from 'commander';
import { version } from '../package.json';
import { addAuthCommands } from './commands/auth/index.js';
import { COMMAND_GROUPS, OPERATION_COMMANDS } from './commands/index.js';
import { addListenCommand } from './commands/listen/index.js';
import { EXIT_CODES_HELP, reportError } from './errors.js';
import { type CommandContext, addCommonOptions, addOperationCommand, subcommand } from './operation-commands.js';
import { loadOperationSpecs } from './operation-spec.js';
import { type Terminal, processTerminal } from './terminal.js';

const HELP_FOOTER = `
Examples:
  convo login
  convo conversations list --status active --platform whatsapp --search ana
  convo messages send --conversation conv_123 --content "Your order shipped"
  convo contacts create --name "Ana Souza" --phone +5511987654321 --tag vip --attribute tier=gold
  convo orders create --contact ct_123 --currency BRL --item "Denim jacket:1:18990"
  convo workflows trigger wf_123 --contact ct_123 --data order=1001
  convo contacts import contacts.csv
  convo conversations export --status resolved > resolved.jsonl
  convo listen --forward-to http://localhost:4242/webhooks

Configuration (the first that is set wins, for the key and the base URL each):
  --api-key / --base-url, then CONVO_API_KEY / CONVO_BASE_URL, then the profile saved by
  \`convo login\` (--profile or CONVO_PROFILE, else "default"). Global options go before the
  command or after it; the base URL ends with /v1.

Output: a table on a terminal; the API's JSON with --json or when stdout is not a terminal;
--all on a list command prints every record as JSON Lines.
${EXIT_CODES_HELP}
`;

/** The whole command tree. Builds from plain data only: the SDK and zod load when an action runs. */
export async function buildProgram(terminal: Terminal): Promise<Command> {
  const context: CommandContext = { terminal, specs: await loadOperationSpecs() };
  const program = new Command('convo')
    .description(
      'The Convo /v1 API from the terminal: conversations, messages, contacts, tags, orders, workflows, events and webhooks.',
    )
    .version(version)
    .exitOverride()
    // Errors are printed by reportError, as one `convo: …` line.
    .configureOutput({
      writeOut: (text) => terminal.stdout.write(text),
      writeErr: (text) => terminal.stderr.write(text),
      outputError: () => {},
    })
    .addHelpText('after', HELP_FOOTER);
  // Global options before the command are the program's (positional options keep the two apart);
  // each command that takes them gets them, unless it was given its own after its name.
  addCommonOptions(program).enablePositionalOptions();
  program.hook('preAction', (root, action) => {
    if (action === root) return;
    for (const option of root.options) {
      const name = option.attributeName();
      const value = root.getOptionValue(name);
      if (value === undefined || action.getOptionValue(name) !== undefined) continue;
      if (action.options.some((own) => own.attributeName() === name))
        action.setOptionValueWithSource(name, value, root.getOptionValueSource(name));
    }
  });

  for (const group of COMMAND_GROUPS) subcommand(program, group.name, group.summary);
  for (const [id, naming] of Object.entries(OPERATION_COMMANDS))
    addOperationCommand(program, id as OperationId, naming, context);
  for (const group of COMMAND_GROUPS) {
    const command = subcommand(program, group.name);
    for (const [name, summary] of Object.entries(group.subgroups ?? {})) subcommand(command, name, summary);
    group.addCommands?.(command, context);
  }
  addAuthCommands(program, context);
  addListenCommand(program, context);
  return program;
}

/** Runs one command line (without `node convo`); returns the exit code. */
export async function run(argv: readonly string[], terminal: Terminal = processTerminal()): Promise<number> {
  try {
    const program = await buildProgram(terminal);
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    return reportError(error, terminal.stderr);
  }
}
