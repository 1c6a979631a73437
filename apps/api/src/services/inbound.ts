import type { Message, SandboxInboundBody } from '@convo/core';
import type * as z from 'zod';
import { contactsRepository } from '../repositories/contacts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { contactsService } from './contacts.js';
import { type ServiceContext, scopeOf, transaction } from './context.js';
import { conversationsService } from './conversations.js';
import { messagesService } from './messages.js';

/**
 * A message from a contact as the sandbox endpoint (`POST /v1/sandbox/inbound`) makes one up;
 * channels' messages take services/channel-inbound.ts instead. In one transaction: finds the
 * contact by phone or creates it; finds the contact's conversation on that platform that is not
 * archived, or opens one (`conversation.created`); stores the inbound message, which reopens a
 * resolved conversation (`message.received`).
 */
export async function receiveInbound(
  ctx: ServiceContext,
  input: z.output<typeof SandboxInboundBody>,
): Promise<Message> {
  return transaction(ctx, async (tx) => {
    const scope = scopeOf(tx);
    const contact =
      (await contactsRepository.findByPhone(scope, input.from.phone)) ??
      (await contactsService.create(tx, { phone: input.from.phone, name: input.from.name ?? null }));
    const conversation =
      (await conversationsRepository.findOpenForContact(scope, contact.id, input.platform)) ??
      (await conversationsService.create(tx, { contact_id: contact.id, platform: input.platform }));
    return messagesService.receive(tx, { conversationId: conversation.id, content: input.content });
  });
}
