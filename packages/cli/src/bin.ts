import { run } from './program.js';
import { processTerminal } from './terminal.js';

// `convo … | head` closes stdout early: that is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

process.exitCode = await run(process.argv.slice(2), processTerminal());
