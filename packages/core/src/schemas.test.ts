import { describe, expect, it } from 'vitest';
import {
  CreateContactBody,
  CreateOrderBody,
  ListConversationsQuery,
  SendMessageBody,
  TagName,
  WebhookUrl,
  text,
} from './index.js';

describe('text()', () => {
  it('counts code points, not UTF-16 units', () => {
    expect(text(1, 2).safeParse('😀😀').success).toBe(true);
    expect(text(1, 2).safeParse('😀😀😀').success).toBe(false);
    expect(text(1, 2).safeParse('').error?.issues[0]).toMatchObject({
      code: 'too_small',
      origin: 'string',
      minimum: 1,
    });
  });
});

describe('SendMessageBody', () => {
  it('accepts `message` as an alias of `content` and always yields content', () => {
    expect(SendMessageBody.parse({ conversation_id: 'conv_1', message: 'hi' })).toEqual({
      conversation_id: 'conv_1',
      content: 'hi',
      type: 'text',
    });
    expect(SendMessageBody.parse({ conversation_id: 'conv_1', content: 'hi', message: 'hi' }).content).toBe('hi');
  });

  it('flags differing content and message on `message`, and a missing content on `content`', () => {
    expect(
      SendMessageBody.safeParse({ conversation_id: 'c', content: 'a', message: 'b' }).error?.issues[0],
    ).toMatchObject({
      path: ['message'],
      params: { constraint: 'unique' },
    });
    expect(SendMessageBody.safeParse({ conversation_id: 'c' }).error?.issues[0]).toMatchObject({
      path: ['content'],
      code: 'invalid_type',
    });
  });
});

describe('SendMessageBody with media and templates', () => {
  const fields = {
    content: 'A caption',
    message: 'Another',
    template: { name: 'order_update', language: 'en_US' },
    media: { file_id: 'file_1' },
  };
  const subsets = <T>(items: T[]): T[][] => {
    const all: T[][] = [[]];
    for (const item of items) for (const subset of [...all]) all.push([...subset, item]);
    return all;
  };

  it('answers every mix of type and fields with a result or issues, never a throw', () => {
    for (const type of [undefined, 'text', 'template', 'image', 'video', 'audio', 'document', 'sticker'])
      for (const present of subsets(Object.keys(fields) as (keyof typeof fields)[])) {
        const body = { conversation_id: 'conv_1', ...(type ? { type } : {}) };
        for (const name of present) Object.assign(body, { [name]: fields[name] });
        const result = SendMessageBody.safeParse(body);
        expect(result.success || result.error.issues.length > 0, JSON.stringify(body)).toBe(true);
      }
  });

  it('takes a media message with a file or a link and a caption, except audio', () => {
    expect(
      SendMessageBody.parse({ conversation_id: 'c', type: 'image', content: 'Hi', media: { file_id: 'file_1' } }),
    ).toEqual({ conversation_id: 'c', type: 'image', content: 'Hi', media: { file_id: 'file_1' } });
    expect(
      SendMessageBody.parse({ conversation_id: 'c', type: 'document', media: { url: 'https://x.example/a.pdf' } }),
    ).toEqual({ conversation_id: 'c', type: 'document', content: '', media: { url: 'https://x.example/a.pdf' } });
    const issueOf = (body: object) => SendMessageBody.safeParse({ conversation_id: 'c', ...body }).error?.issues[0];
    expect(issueOf({ type: 'audio', content: 'x', media: { file_id: 'f' } })).toMatchObject({ keys: ['content'] });
    expect(issueOf({ type: 'video' })).toMatchObject({ path: ['media'], code: 'invalid_type' });
    expect(issueOf({ type: 'video', media: {} })).toMatchObject({ path: ['media', 'file_id'] });
    expect(issueOf({ type: 'video', media: { file_id: 'f', url: 'https://x.example/v.mp4' } })).toMatchObject({
      path: ['media'],
      keys: ['url'],
    });
    expect(issueOf({ content: 'x', media: { file_id: 'f' } })).toMatchObject({ keys: ['media'] });
  });
});

describe('formats', () => {
  it('reports phone and currency syntax as invalid_format with their names', () => {
    expect(CreateContactBody.safeParse({ phone: '555' }).error?.issues[0]).toMatchObject({
      code: 'invalid_format',
      format: 'e164',
      path: ['phone'],
    });
    const order = { contact_id: 'ct_1', items: [{ name: 'x', quantity: 1, unit_amount: 1 }] };
    expect(CreateOrderBody.safeParse({ ...order, currency: 'usd' }).error?.issues[0]).toMatchObject({
      code: 'invalid_format',
      format: 'iso-4217',
    });
    expect(CreateOrderBody.safeParse({ ...order, currency: 'XYZ' }).error?.issues[0]).toMatchObject({
      code: 'invalid_format',
      format: 'iso-4217',
    });
    expect(CreateOrderBody.safeParse({ ...order, currency: 'BRL' }).success).toBe(true);
  });

  it('rejects tags with "/" or outer white space as a pattern problem', () => {
    for (const bad of ['a/b', ' a', 'a '])
      expect(TagName.safeParse(bad).error?.issues[0]).toMatchObject({ code: 'invalid_format', format: 'regex' });
    expect(TagName.safeParse('café vip').success).toBe(true);
  });

  it('refuses white space in a URL as a url format problem, which zod would otherwise trim or drop', () => {
    for (const bad of [' https://hooks.example.org/', 'https://hooks.example.org/ ', 'https://hooks.ex\tample.org/x'])
      expect(WebhookUrl.safeParse(bad).error?.issues[0], JSON.stringify(bad)).toMatchObject({
        code: 'invalid_format',
        format: 'url',
      });
    expect(WebhookUrl.parse('https://hooks.example.org:8443/in?x=1')).toBe('https://hooks.example.org:8443/in?x=1');
    expect(WebhookUrl.safeParse('ftp://hooks.example.org/').success).toBe(false);
  });
});

describe('pagination', () => {
  it('defaults to 20 from 0 and refuses 101 instead of clamping', () => {
    expect(ListConversationsQuery.parse({})).toMatchObject({ limit: 20, offset: 0 });
    expect(ListConversationsQuery.safeParse({ limit: 101 }).error?.issues[0]).toMatchObject({
      code: 'too_big',
      maximum: 100,
    });
    expect(ListConversationsQuery.safeParse({ extra: 1 }).error?.issues[0]).toMatchObject({
      code: 'unrecognized_keys',
    });
  });
});
