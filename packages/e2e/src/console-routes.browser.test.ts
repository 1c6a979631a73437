import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type DatabaseHandle,
  accountsService,
  buildServer,
  defaultSettings,
  migrateToLatest,
  openDatabase,
  peopleService,
} from '@convo/api';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_ROUTES } from '../../../apps/console/src/routes.js';
import { CHROMIUM, axeFindings, chromiumAvailable } from './browser.js';
import { freePort } from './server.js';

/**
 * Every route of the console (its own route table, apps/console/src/routes.ts, plus a path that is none) at a
 * phone's width and a desktop's, in Debian's chromium: the page is no wider than the screen, its heading and its
 * primary action (`data-primary-action`) are in the first screenful, and axe-core finds nothing serious or critical.
 * Each page's screenshot at each size is in docs/screenshots/routes (written when missing or UPDATE_SCREENSHOTS=1).
 */

const available = chromiumAvailable('the console route test');

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CONSOLE_DIR = join(ROOT, 'apps/console/dist');
const SCREENSHOTS = join(ROOT, 'docs/screenshots/routes');
const VIEWPORTS = [
  { name: 'phone', width: 390, height: 844 },
  { name: 'desktop', width: 1280, height: 800 },
] as const;
const OWNER = { email: 'grace@example.com', password: 'a long enough password', account: 'Tostado Coffee' };
/** A path no route takes: the console's own "not found" page. */
const NOWHERE = '/no-such-page';

describe.skipIf(!available)('every console route at 390 and 1280 px', () => {
  let browser: Browser;
  let origin: string;
  let database: DatabaseHandle;
  let close: () => Promise<void>;
  let sessionToken: string;
  let flushRequestLog: () => Promise<void>;
  /** A value for each path parameter, by route. */
  const values: Record<string, Record<string, string>> = {};

  beforeAll(async () => {
    if (!existsSync(join(CONSOLE_DIR, 'index.html')))
      throw new Error(`${CONSOLE_DIR} has no build: run \`npx -y pnpm@10.34.8 --filter @convo/console build\``);
    const dir = mkdtempSync(join(tmpdir(), 'convo-e2e-routes-'));
    database = openDatabase(`file:${join(dir, 'convo.db')}`);
    await migrateToLatest(database.db);
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const settings = defaultSettings({ consoleDir: CONSOLE_DIR, publicUrl: origin, sandboxEnabled: true });
    const app = await buildServer({ database, logger: false, settings });
    await app.listen({ port, host: '127.0.0.1' });
    flushRequestLog = () => app.requestLog.flush();
    close = async () => {
      await app.close();
      await database.destroy();
      rmSync(dir, { recursive: true, force: true });
    };
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    await seed();
  });

  afterAll(async () => {
    await browser?.close();
    await close?.();
  });

  /** An account with something on every page: keys (one revoked), an endpoint with a delivery, a channel, people. */
  async function seed() {
    const ctx = { database };
    sessionToken = (
      await peopleService.signUp(ctx, { email: OWNER.email, password: OWNER.password, accountName: OWNER.account })
    ).token;
    const session = await peopleService.resolve(ctx, sessionToken);
    if (!session) throw new Error('no session');
    const accountId = session.account.id;
    const { key } = await accountsService.createKey(ctx, { accountId, type: 'full_access', name: 'backend' });
    const old = await accountsService.createKey(ctx, { accountId, type: 'read_only', name: 'reporting' });
    await accountsService.revokeAccountKey({ database, accountId }, { id: old.id, by: OWNER.email });
    const api = async (path: string, body: unknown) => {
      const response = await fetch(`${origin}/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(response.status, `POST ${path}`).toBeLessThan(300);
      return (await response.json()) as { id: string };
    };
    const endpoint = await api('/webhook_endpoints', {
      url: 'https://fulfilment.tostado.example/hooks/convo-deliveries',
      events: ['order.placed', 'conversation.resolved'],
      description: 'Fulfilment',
    });
    await api(`/webhook_endpoints/${endpoint.id}/test`, undefined);
    await api('/channels', {
      platform: 'whatsapp',
      name: 'Tostado WhatsApp',
      external_id: '106540352242922',
      access_token: 'EAAGm0PX4ZCpsBAK7ZBd2xQ9cZCfW1TnE0ZA4ZBy6ZCZAuhVwQ3XbZB',
      app_secret: '9f8e7d6c5b4a39281706f5e4d3c2b1a0',
    });
    const inbound = (await api('/sandbox/inbound', {
      platform: 'whatsapp',
      from: { phone: '+5511987654321', name: 'Marta Oliveira' },
      content: 'Hi! Do you still have the Ethiopia Yirgacheffe in 250 g bags?',
    })) as { id: string; conversation_id: string };
    await api('/messages', {
      conversation_id: inbound.conversation_id,
      content: 'Yes, both are roasted this week: 250 g bags at $16.50. Shall I put two aside?',
    });
    const conversation = await (
      await fetch(`${origin}/v1/conversations/${inbound.conversation_id}`, {
        headers: { authorization: `Bearer ${key}` },
      })
    ).json();
    const contactId = (conversation as { contact: { id: string } }).contact.id;
    await api('/orders', {
      contact_id: contactId,
      currency: 'USD',
      items: [{ name: 'Ethiopia Yirgacheffe, 250 g', quantity: 2, unit_amount: 1650 }],
    });
    const workflow = await api('/workflows', {
      name: 'Thank buyers when their order is paid',
      steps: [
        { type: 'send_message', content: 'Thank you, {{contact.name}}!' },
        { type: 'add_tag', tag: 'customer' },
      ],
    });
    await api(`/workflows/${workflow.id}/trigger`, { contact_id: contactId });
    const invitation = await peopleService.createInvitation({ database, session }, 'member');
    const reset = await peopleService.createPasswordReset(ctx, OWNER.email);
    values['/invite/:token'] = { token: invitation.token };
    values['/reset-password/:token'] = { token: reset.token };
    const refused = await fetch(`${origin}/v1/contacts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ phone: 'not a phone' }),
    });
    expect(refused.status).toBe(400);
    await flushRequestLog();
    values['/logs/:request_id'] = { request_id: refused.headers.get('x-request-id') as string };
    values['/webhooks/:id'] = { id: endpoint.id };
    values['/conversations/:id'] = { id: inbound.conversation_id };
    values['/contacts/:id'] = { id: contactId };
    values['/workflows/:id'] = { id: workflow.id };
  }

  const pathOf = (route: string) =>
    route.replace(/:(\w+)/g, (_, name: string) => {
      const value = values[route]?.[name];
      if (!value) throw new Error(`no value for :${name} of ${route}: give one in seed()`);
      return value;
    });

  const routes = [...CONSOLE_ROUTES.map((route) => ({ ...route })), { path: NOWHERE, signedIn: true }];
  const cases = routes.flatMap((route) => VIEWPORTS.map((viewport) => ({ route, viewport })));

  it.each(cases)('$route.path at $viewport.width px', async ({ route, viewport }) => {
    const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height } });
    context.setDefaultTimeout(10_000);
    if (route.signedIn) await context.addCookies([{ name: 'convo_session', value: sessionToken, url: origin }]);
    const page = await context.newPage();
    try {
      await page.goto(`${origin}/console${pathOf(route.path)}`);
      const heading = page.getByRole('heading', { level: 1 }).first();
      await heading.waitFor();
      await expect
        .poll(
          () =>
            page
              .getByRole('status')
              .filter({ hasText: /^Loading/ })
              .count(),
          { timeout: 10_000 },
        )
        .toBe(0);
      // A signed-in page stayed signed in, a public one stayed public.
      expect(new URL(page.url()).pathname).toBe(`/console${pathOf(route.path)}`);

      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, 'the page is no wider than the screen').toBeLessThanOrEqual(viewport.width);
      await expectInFirstScreen(page, heading, 'the heading', viewport.height);
      const primary = page.locator('[data-primary-action]');
      if ((await primary.count()) > 0)
        await expectInFirstScreen(page, primary.first(), 'the primary action', viewport.height);
      const { passed, violations } = await axeFindings(page);
      expect(passed, 'axe ran its rules').toBeGreaterThan(0);
      expect(violations).toEqual([]);

      const image = await page.screenshot({ fullPage: true });
      const file = join(SCREENSHOTS, `${screenshotName(route.path)}-${viewport.width}.png`);
      if (process.env.UPDATE_SCREENSHOTS === '1' || !existsSync(file)) {
        mkdirSync(SCREENSHOTS, { recursive: true });
        writeFileSync(file, image);
      }
    } finally {
      await context.close();
    }
  });
});

async function expectInFirstScreen(
  page: Page,
  target: ReturnType<Page['locator']>,
  what: string,
  height: number,
): Promise<void> {
  const box = await target.boundingBox();
  expect(box, `${what} is shown`).not.toBeNull();
  expect((box?.y ?? 0) + (box?.height ?? 0), `${what} ends within the first ${height} px`).toBeLessThanOrEqual(height);
  expect(await page.evaluate(() => window.scrollY)).toBe(0);
}

/** `/webhooks/:id` → `webhooks-id`. */
const screenshotName = (path: string) => path.replace(/^\//, '').replaceAll(':', '').replaceAll('/', '-') || 'root';
