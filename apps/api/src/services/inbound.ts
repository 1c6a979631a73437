import type { Message, SandboxInboundBody } from '@convo/core';
import type * as z from 'zod';
import { contactsRepository } from '../repositories/contacts.js';
import { conversationsRepository } from '../repositories/conversations.js';
import { contactsService } from './contacts.js';
import { type ServiceContext, inContextTransaction, inTransaction } from './context.js';
import { conversationsService } from './conversations.js';
import { messagesService } from './messages.js';

/**
 * A message arriving from a contact on a platform, as the platforms' webhooks will deliver it
 * (the sandbox endpoint calls this today). In one transaction: finds the contact by phone or
 * creates it; finds the contact's conversation on that platform that is not archived, or opens
 * one (`conversation.created`); stores the inbound message, which reopens a resolved
 * conversation (`message.received`).
 */
export async function receiveInbound(ctx: ServiceContext, input: z.output<typeof SandboxInboundBody>): Promise<Message> {
  return inContextTransaction(ctx, (tx) =>
    inTransaction(tx, async (scope) => {
      const contact =
        (await contactsRepository.findByPhone(scope, input.from.phone)) ??
        (await contactsService.create(tx, { phone: input.from.phone, name: input.from.name ?? null }));
      const conversation =
        (await conversationsRepository.findOpenForContact(scope, contact.id, input.platform)) ??
        (await conversationsService.create(tx, { contact_id: contact.id, platform: input.platform }));
      return messagesService.receive(tx, { conversationId: conversation.id, content: input.content });
    }),
  );
}
