import { expect, it } from 'vitest';
import { describeEachDialect } from '../testing/harness.js';
import { conversationsRepository } from './conversations.js';
import { messagesRepository } from './messages.js';
import { TenantScope } from './tenant.js';

describeEachDialect('recording messages on a conversation', (server) => {
  const scope = () => new TenantScope(server().database.db, server().accountId, server().database.capabilities);

  async function conversation(status: 'active' | 'archived' = 'active') {
    const at = '2026-01-01T00:00:00.000Z';
    const suffix = Math.random().toString(36).slice(2, 10);
    await scope().insert('contacts', {
      id: `ct_${suffix}`,
      name: null,
      name_search: null,
      phone: `+1555${suffix}`,
      phone_digits: '1555',
      email: null,
      email_search: null,
      tags: '[]',
      attributes: '{}',
      identities: '[]',
      created_at: at,
      updated_at: at,
    });
    const id = `conv_${suffix}`;
    await scope().insert('conversations', {
      id,
      contact_id: `ct_${suffix}`,
      platform: 'whatsapp',
      status,
      message_count: 0,
      last_message_content: null,
      last_message_at: null,
      last_activity_at: at,
      event_sequence: 0,
      created_at: at,
      updated_at: at,
    });
    return id;
  }

  const message = (conversationId: string, content: string, at: string) => ({
    id: `msg_${Math.random().toString(36).slice(2, 12)}`,
    conversation_id: conversationId,
    direction: 'outbound' as const,
    type: 'text' as const,
    content,
    status: 'queued' as const,
    platform_message_id: null,
    error: null,
    media: null,
    created_at: at,
    updated_at: at,
  });

  it('never lets an older message replace a newer last message (sends that arrive out of order)', async () => {
    const id = await conversation();
    expect(
      await messagesRepository.insertIntoOpenConversation(scope(), message(id, 'newer', '2026-02-01T00:00:02.000Z')),
    ).toBe('recorded');
    expect(
      await messagesRepository.insertIntoOpenConversation(scope(), message(id, 'older', '2026-02-01T00:00:01.000Z')),
    ).toBe('recorded');
    const row = await conversationsRepository.findById(scope(), id);
    expect(row).toMatchObject({
      message_count: 2,
      last_message_content: 'newer',
      last_message_at: '2026-02-01T00:00:02.000Z',
      last_activity_at: '2026-02-01T00:00:02.000Z',
      updated_at: '2026-02-01T00:00:02.000Z',
    });
  });

  it('stores nothing for an archived or unknown conversation, and says which', async () => {
    const archived = await conversation('archived');
    expect(
      await messagesRepository.insertIntoOpenConversation(scope(), message(archived, 'x', '2026-02-01T00:00:00.000Z')),
    ).toBe('archived');
    expect(
      await messagesRepository.insertIntoOpenConversation(
        scope(),
        message('conv_nope', 'x', '2026-02-01T00:00:00.000Z'),
      ),
    ).toBe('missing');
    const other = new TenantScope(server().database.db, server().otherAccountId, server().database.capabilities);
    expect(
      await messagesRepository.insertIntoOpenConversation(other, message(archived, 'x', '2026-02-01T00:00:00.000Z')),
    ).toBe('missing');
    expect((await messagesRepository.listByConversation(scope(), archived, { limit: 10, offset: 0 })).total).toBe(0);
    expect(await conversationsRepository.findById(scope(), archived)).toMatchObject({
      message_count: 0,
      last_message_at: null,
    });
  });
});
