import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsRepository } from '../repositories/events.js';
import { TenantScope } from '../repositories/tenant.js';
import { ACTIVE_DIALECTS, type TestServer, startTestServer } from '../testing/harness.js';
import { contactsService } from './contacts.js';
import { conversationsService } from './conversations.js';

for (const dialect of ACTIVE_DIALECTS) {
  describe(`the event outbox [${dialect}]`, () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(dialect);
    });
    afterAll(() => server.close());

    it('writes nothing, event or change, when the transaction rolls back', async () => {
      const ctx = { database: server.database, accountId: server.accountId, settings: server.settings };
      const contact = await contactsService.create(ctx, { phone: '+14155559876' });
      const count = async () =>
        (
          await eventsRepository.list(
            new TenantScope(server.database.db, server.accountId, server.database.capabilities),
            { since: '2000-01-01T00:00:00.000Z' },
            { limit: 1, offset: 0 },
          )
        ).total;
      const before = await count();

      let conversationId: string | undefined;
      await expect(
        server.database.db.transaction().execute(async (trx) => {
          const conversation = await conversationsService.create(
            { ...ctx, database: { ...ctx.database, db: trx } },
            { contact_id: contact.id, platform: 'whatsapp' },
          );
          conversationId = conversation.id;
          throw new Error('the caller fails after the change');
        }),
      ).rejects.toThrow('the caller fails');

      expect(conversationId).toBeDefined();
      expect(await count()).toBe(before);
      await expect(conversationsService.retrieve(ctx, conversationId as string)).rejects.toMatchObject({
        code: 'not_found',
      });

      // And the same change committed has its event.
      await conversationsService.create(ctx, { contact_id: contact.id, platform: 'whatsapp' });
      expect(await count()).toBe(before + 1);
    });
  });
}
