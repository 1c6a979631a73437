import {
  BadRequestError,
  ConnectionError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
} from '@convo/sdk';
import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { CliError, EXIT_CODES, UsageError, exitCodeOf, messageOf, reportError } from './errors.js';
import { CapturedOutput } from './test-terminal.js';

const api = { status: 400, requestId: 'req_123' };

describe('exit codes', () => {
  it('has one per class of error', () => {
    expect(exitCodeOf(new BadRequestError({ ...api, code: 'bad_request', message: 'bad' }))).toBe(1);
    expect(exitCodeOf(new UsageError('bad flag'))).toBe(2);
    expect(exitCodeOf(new CommanderError(1, 'commander.unknownOption', "error: unknown option '--x'"))).toBe(2);
    expect(exitCodeOf(new UnauthorizedError({ ...api, status: 401, code: 'unauthorized', message: 'no' }))).toBe(3);
    expect(exitCodeOf(new ForbiddenError({ ...api, status: 403, code: 'forbidden', message: 'no' }))).toBe(3);
    expect(exitCodeOf(new CliError('no API key', 'auth'))).toBe(3);
    expect(exitCodeOf(new NotFoundError({ ...api, status: 404, code: 'not_found', message: 'gone' }))).toBe(4);
    expect(exitCodeOf(new RateLimitedError({ ...api, status: 429, code: 'rate_limited', message: 'slow down' }))).toBe(
      5,
    );
    expect(exitCodeOf(new ServerError({ ...api, status: 503, code: 'server_error', message: 'down' }))).toBe(6);
    expect(exitCodeOf(new ConnectionError({ code: 'connection_error', message: 'refused' }))).toBe(6);
    expect(exitCodeOf(new TimeoutError({ code: 'timeout', message: 'slow' }))).toBe(6);
    expect(exitCodeOf(new Error('anything else'))).toBe(1);
    expect(exitCodeOf(Object.assign(new Error('ENOENT'), { code: 'ENOENT' }))).toBe(1);
  });

  it('is 0 for help and version, which commander reports as errors', () => {
    expect(exitCodeOf(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'))).toBe(0);
    expect(exitCodeOf(new CommanderError(0, 'commander.version', '0.1.0'))).toBe(0);
    expect(EXIT_CODES.ok).toBe(0);
  });
});

describe('messages', () => {
  it('gives a 400 its field and constraint and the request id', () => {
    const error = new BadRequestError({
      ...api,
      code: 'bad_request',
      message: 'Must be an E.164 phone number',
      details: {
        field: 'phone',
        constraint: 'format',
        issues: [{ field: 'phone', constraint: 'format', message: 'x' }],
      },
    });
    expect(messageOf(error)).toBe('Must be an E.164 phone number [phone: format] (request req_123)');
    const more = new BadRequestError({
      ...api,
      code: 'bad_request',
      message: 'Invalid',
      details: {
        field: 'phone',
        constraint: 'required',
        issues: [
          { field: 'phone', constraint: 'required', message: 'x' },
          { field: 'email', constraint: 'format', message: 'y' },
        ],
      },
    });
    expect(messageOf(more)).toBe('Invalid [phone: required] (and 1 more problem) (request req_123)');
  });

  it('names the network failure', () => {
    const cause = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    expect(
      messageOf(
        new ConnectionError({ code: 'connection_error', message: 'Could not reach http://x: fetch failed', cause }),
      ),
    ).toBe('Could not reach http://x: fetch failed (ECONNREFUSED)');
  });

  it('writes one `convo:` line on stderr and returns the code', () => {
    const stderr = new CapturedOutput();
    expect(
      reportError(
        new NotFoundError({ ...api, status: 404, code: 'not_found', message: 'No such contact:\nct_1' }),
        stderr,
      ),
    ).toBe(4);
    expect(stderr.text).toBe('convo: No such contact: ct_1 (request req_123)\n');
    const quiet = new CapturedOutput();
    expect(reportError(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'), quiet)).toBe(0);
    expect(quiet.text).toBe('');
    expect(reportError(new CommanderError(1, 'commander.unknownCommand', "error: unknown command 'lis'"), quiet)).toBe(
      2,
    );
    expect(quiet.text).toBe("convo: unknown command 'lis'\n");
  });
});
