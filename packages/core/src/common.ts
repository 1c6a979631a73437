import * as z from 'zod';

/** Id prefixes: every id is `<prefix>_<ULID>` (opaque, time-sortable). */
export const ID_PREFIXES = {
  account: 'acct',
  apiKey: 'key',
  conversation: 'conv',
  contact: 'ct',
  message: 'msg',
  order: 'ord',
  workflow: 'wf',
  workflowRun: 'run',
  event: 'evt',
  webhookEndpoint: 'whe',
  webhookDelivery: 'whd',
  channel: 'ch',
  file: 'file',
} as const;
export type IdKind = keyof typeof ID_PREFIXES;

/** An id as it appears in a response. Ids are opaque to clients, so requests accept any string. */
export const Id = z.string();

/** ISO 8601 UTC timestamp with milliseconds, e.g. `2026-11-22T10:15:30.123Z`. */
export const Timestamp = z.iso.datetime({ precision: 3 }).meta({ example: '2026-11-22T10:15:30.123Z' });

/** The instants a Timestamp can show: its year has four digits in UTC. */
export const EARLIEST_TIMESTAMP = '0000-01-01T00:00:00.000Z';
export const LATEST_TIMESTAMP = '9999-12-31T23:59:59.999Z';

/**
 * A date and time a request gives, stored in UTC to the millisecond. Bounded to what a Timestamp can show, so
 * whatever is accepted reads back: `9999-12-31T23:59:59-14:00` is in the year 10000 in UTC, a `max` problem.
 */
export function dateTimeInput(description: string) {
  const earliest = Date.parse(EARLIEST_TIMESTAMP);
  const latest = Date.parse(LATEST_TIMESTAMP);
  return z.iso
    .datetime({ offset: true })
    .check((ctx) => {
      const at = Date.parse(ctx.value);
      if (at < earliest) {
        ctx.issues.push({
          code: 'custom',
          params: { constraint: 'min' },
          input: ctx.value,
          message: `Must be ${EARLIEST_TIMESTAMP} or later in UTC`,
        });
      } else if (at > latest) {
        ctx.issues.push({
          code: 'custom',
          params: { constraint: 'max' },
          input: ctx.value,
          message: `Must be ${LATEST_TIMESTAMP} or earlier in UTC`,
        });
      }
    })
    .meta({
      description: `${description} ISO 8601 with \`Z\` or an offset, from ${EARLIEST_TIMESTAMP} to ${LATEST_TIMESTAMP} in UTC.`,
    });
}

/** A string whose length counts code points, not UTF-16 units, as JSON Schema's `minLength`/`maxLength` do. */
export function text(min: number, max: number) {
  return z
    .string()
    .check((ctx) => {
      const length = [...ctx.value].length;
      if (length < min) {
        ctx.issues.push({
          code: 'too_small',
          origin: 'string',
          minimum: min,
          inclusive: true,
          input: ctx.value,
          message: `Must be at least ${min} characters`,
        });
      } else if (length > max) {
        ctx.issues.push({
          code: 'too_big',
          origin: 'string',
          maximum: max,
          inclusive: true,
          input: ctx.value,
          message: `Must be at most ${max} characters`,
        });
      }
    })
    .meta({ minLength: min, maxLength: max });
}

export const Platform = z.enum(['whatsapp', 'facebook', 'instagram']).meta({ id: 'Platform' });
export type Platform = z.infer<typeof Platform>;

export const ConversationStatus = z.enum(['active', 'resolved', 'archived']).meta({ id: 'ConversationStatus' });
export type ConversationStatus = z.infer<typeof ConversationStatus>;

/** A string in a named syntax: a mismatch is a `format` problem, where `.regex()` rules give `pattern` problems. */
export function formatted(format: string, pattern: RegExp, message: string) {
  return z
    .string()
    .check((ctx) => {
      if (!pattern.test(ctx.value)) ctx.issues.push({ code: 'invalid_format', format, input: ctx.value, message });
    })
    .meta({ format, pattern: pattern.source });
}

/** E.164: `+`, then 7 to 15 digits, the first not 0. */
export const Phone = formatted(
  'e164',
  /^\+[1-9]\d{6,14}$/,
  'Must be an E.164 phone number: + then 7 to 15 digits, the first not 0',
).meta({
  example: '+14155550123',
});

export const PAGE_LIMIT_DEFAULT = 20;
export const PAGE_LIMIT_MAX = 100;
/** Every list endpoint's page size and offset; a limit past the maximum is a 400, never clamped. */
export const pagination = {
  limit: z.int().min(1).max(PAGE_LIMIT_MAX).default(PAGE_LIMIT_DEFAULT).meta({ description: 'Page size, 1 to 100.' }),
  offset: z.int().min(0).default(0).meta({ description: 'Zero-based position of the first record.' }),
};

/** Search over names, and over phone digits when it holds a digit; empty means no filter. */
export const Search = z.string().max(200).meta({
  description:
    "Case-insensitive substring of the name; when the search holds a digit, also a substring of the phone number's digits.",
});

/** The list envelope of every list endpoint. */
export function listOf<T extends z.ZodType>(item: T, id: string) {
  return z
    .object({
      data: z.array(item),
      total: z.int().min(0),
      limit: z.int().min(1).max(PAGE_LIMIT_MAX),
      offset: z.int().min(0),
      has_more: z.boolean(),
    })
    .meta({ id });
}

export interface Page<T> {
  data: T[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}
