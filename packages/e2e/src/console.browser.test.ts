import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type DatabaseHandle,
  buildServer,
  defaultSettings,
  migrateToLatest,
  openDatabase,
  peopleService,
} from '@convo/api';
import { type Browser, type BrowserContext, type Locator, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, axeFindings, chromiumAvailable } from './browser.js';
import { freePort } from './server.js';

/**
 * The web console in a real browser against a real server (CONTRACT: Console and people): sign-up,
 * keys generated, used, revoked and refused, an invitation taken up in a second browser, sign-out,
 * the keyboard-only path through the key dialog, a password reset link, axe-core on every page
 * and the CSP never tripped. The steps run in order and share the server, browser and state.
 */

const available = chromiumAvailable('the console browser test');

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CONSOLE_DIR = join(ROOT, 'apps/console/dist');
const SCREENSHOTS = join(ROOT, 'docs/screenshots');
const VIEWPORT = { width: 1280, height: 800 };

const OWNER = { email: 'ada@example.com', password: 'correct horse battery', account: 'Acme Robotics' };
const MEMBER = { email: 'grace@example.com', password: 'another horse battery' };

interface Problem {
  kind: 'csp' | 'console' | 'pageerror' | 'response';
  text: string;
}

describe.skipIf(!available)('the web console in a browser', () => {
  let browser: Browser;
  let origin: string;
  let close: () => Promise<void>;
  let database: DatabaseHandle;
  let owner: BrowserContext;
  let page: Page;
  let memberContext: BrowserContext;
  let member: Page;
  /**
   * CSP violations, console errors and uncaught exceptions of every context the flow runs in (the CSP is enforced in
   * all of them).
   */
  const problems: Problem[] = [];
  /** Console paths whose refusal (4xx) a step provokes on purpose. */
  const expectedFailures: string[] = [];
  const expectedFailure = (address: string) => expectedFailures.some((path) => address.startsWith(url(path)));
  /** The values and ids the steps pass on. */
  const state = { fullKey: '', readOnlyKey: '', keyboardKey: '', invitationUrl: '' };

  beforeAll(async () => {
    if (!existsSync(join(CONSOLE_DIR, 'index.html')))
      throw new Error(
        `${CONSOLE_DIR} has no build: run \`npx -y pnpm@10.34.8 --filter @convo/console build\` (turbo builds it before these tests)`,
      );
    const dir = mkdtempSync(join(tmpdir(), 'convo-e2e-console-'));
    database = openDatabase(`file:${join(dir, 'convo.db')}`);
    await migrateToLatest(database.db);
    // The port first: the public URL is the console's origin (the CSRF check, invitation links).
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const settings = defaultSettings({
      sandboxEnabled: true,
      allowPrivateWebhooks: true,
      consoleDir: CONSOLE_DIR,
      publicUrl: origin,
    });
    const app = await buildServer({ database, logger: false, settings });
    await app.listen({ port, host: '127.0.0.1' });
    close = async () => {
      await app.close();
      await database.destroy();
      rmSync(dir, { recursive: true, force: true });
    };
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    owner = await newContext();
    page = await owner.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await close?.();
  });

  /**
   * A browser context of its own (its own cookies), watched for CSP violations, console errors and uncaught exceptions.
   */
  async function newContext(): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: VIEWPORT });
    context.setDefaultTimeout(10_000);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    await context.exposeFunction('__reportCspViolation', (text: string) => problems.push({ kind: 'csp', text }));
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) => {
        const report = (window as unknown as { __reportCspViolation: (text: string) => void }).__reportCspViolation;
        void report(
          `${event.violatedDirective} blocked ${event.blockedURI || 'inline'} (${event.sourceFile}:${event.lineNumber})`,
        );
      });
    });
    context.on('page', watch);
    return context;
  }

  function watch(watched: Page) {
    watched.on('console', (message) => {
      if (message.type() === 'error' && !expectedFailure(message.location().url))
        problems.push({ kind: 'console', text: message.text() });
    });
    watched.on('pageerror', (error) => problems.push({ kind: 'pageerror', text: error.message }));
    watched.on('response', (response) => {
      if (response.status() >= 400 && !expectedFailure(response.url()))
        problems.push({
          kind: 'response',
          text: `${response.status()} ${response.request().method()} ${response.url()}`,
        });
    });
  }

  const url = (path: string) => `${origin}/console${path}`;
  const heading = (on: Page, name: string) => on.getByRole('heading', { level: 1, name });
  const api = (path: string, key: string, init: RequestInit = {}) =>
    fetch(`${origin}/v1${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } });

  /** axe-core on the page: serious and critical findings fail (browser.ts). */
  async function expectAccessible(on: Page, label: string) {
    const { passed, violations } = await axeFindings(on);
    expect(passed, `axe ran its rules on ${label}`).toBeGreaterThan(0);
    expect(violations, `axe on ${label}`).toEqual([]);
  }

  /** Until no "Loading…" is left on the page. */
  const loaded = (on: Page) =>
    expect
      .poll(
        () =>
          on
            .getByRole('status')
            .filter({ hasText: /^Loading/ })
            .count(),
        { timeout: 10_000 },
      )
      .toBe(0);

  /** Tab (at most `limit` times) until `target` has the focus: the keyboard's way there. */
  async function tabTo(on: Page, target: Locator, limit = 25) {
    for (let presses = 0; presses < limit; presses++) {
      if (await isFocused(target)) return;
      await on.keyboard.press('Tab');
    }
    expect(await isFocused(target), 'reached by Tab').toBe(true);
  }
  const isFocused = (target: Locator) =>
    target.evaluate((element) => element === document.activeElement).catch(() => false);

  /**
   * Always taken (the step runs); written when asked (UPDATE_SCREENSHOTS=1) or missing, so test runs leave the tree
   * clean.
   */
  async function screenshot(on: Page, name: string) {
    const image = await on.screenshot();
    expect(image.length).toBeGreaterThan(0);
    const file = join(SCREENSHOTS, name);
    if (process.env.UPDATE_SCREENSHOTS === '1' || !existsSync(file)) {
      mkdirSync(SCREENSHOTS, { recursive: true });
      writeFileSync(file, image);
    }
  }

  it('1. signs up in the browser and lands on the API keys', async () => {
    await page.goto(url('/'));
    await page.waitForURL(url('/sign-in'));
    await heading(page, 'Sign in to Convo').waitFor();
    await expectAccessible(page, 'sign-in');

    await page.getByRole('link', { name: 'Create one' }).click();
    await heading(page, 'Create your Convo account').waitFor();
    await expectAccessible(page, 'sign-up');
    await page.getByLabel('E-mail').fill(OWNER.email);
    await page.getByLabel('Password', { exact: true }).fill(OWNER.password);
    await page.getByLabel('Account name').fill(OWNER.account);
    await page.getByRole('button', { name: 'Create account' }).click();

    await page.waitForURL(url('/api-keys'));
    await heading(page, 'API keys').waitFor();
    await page.getByText('No keys yet.').waitFor();
    expect(await page.locator('.top-bar').textContent()).toContain(OWNER.email);
  });

  it('2. generates a full-access key, shown once, that calls the API', async () => {
    await page.getByRole('button', { name: 'Generate key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Generate key' });
    await dialog.waitFor();
    await expectAccessible(page, 'API keys, generate dialog');
    await dialog.getByLabel('Name').fill('backend');
    await dialog.getByRole('radio', { name: /^Full access/ }).check();
    await dialog.getByRole('button', { name: 'Generate key' }).click();

    const shown = page.getByRole('dialog', { name: 'Your new key' });
    await shown.waitFor();
    state.fullKey = await shown.getByLabel('Key backend', { exact: true }).inputValue();
    expect(state.fullKey).toMatch(/^convo_sk_/);
    await screenshot(page, 'console-generate-key.png');
    expect((await api('/conversations', state.fullKey)).status).toBe(200);

    await shown.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'detached' });
    const row = page.getByRole('row', { name: /backend/ });
    await row.waitFor();
    expect(await row.textContent()).toContain(`…${state.fullKey.slice(-4)}`);
    expect(await page.content()).not.toContain(state.fullKey);
    // The call above shows as the key's last use without a reload: the page reads the list again while open.
    await row.getByRole('cell').nth(4).filter({ hasNotText: 'Never' }).waitFor();
    await expectAccessible(page, 'API keys');
    await screenshot(page, 'console-api-keys.png');
  });

  it('3. revokes it after a confirmation, effective on the next request', async () => {
    await page.getByRole('button', { name: 'Revoke backend' }).click();
    const confirm = page.getByRole('alertdialog', { name: 'Revoke key' });
    await confirm.waitFor();
    expect(await confirm.textContent()).toContain('Revoke key backend?');
    await expectAccessible(page, 'API keys, revoke confirmation');
    await screenshot(page, 'console-revoke-key.png');
    await confirm.getByRole('button', { name: 'Revoke' }).click();
    await confirm.waitFor({ state: 'detached' });
    await page.getByText('No keys yet.').waitFor();
    const refused = await api('/conversations', state.fullKey);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /^This API key \(convo_sk_.+\) was revoked at /,
    );
    // Revoked keys stay listed under their filter, with when and by whom.
    await page.getByRole('radio', { name: 'Revoked' }).check();
    const revoked = page.getByRole('row', { name: /backend/ });
    await revoked.getByText(`by ${OWNER.email}`).waitFor();
    await expectAccessible(page, 'API keys, revoked');
    await page.getByRole('radio', { name: 'Active' }).check();
  });

  it('4. generates a read-only key, which cannot write', async () => {
    await page.getByRole('button', { name: 'Generate key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Generate key' });
    await dialog.getByLabel('Name').fill('reporting');
    await dialog.getByRole('radio', { name: /^Read-only/ }).check();
    await dialog.getByRole('button', { name: 'Generate key' }).click();
    const shown = page.getByRole('dialog', { name: 'Your new key' });
    state.readOnlyKey = await shown.getByLabel('Key reporting', { exact: true }).inputValue();
    expect(state.readOnlyKey).toMatch(/^convo_rk_/);
    await shown.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('row', { name: /reporting/ }).waitFor();

    expect((await api('/conversations', state.readOnlyKey)).status).toBe(200);
    const write = await api('/contacts', state.readOnlyKey, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x', phone: '+14155550123' }),
    });
    expect(write.status).toBe(403);
  });

  it('5. invites a member, who joins the same account from another browser and cannot manage keys', async () => {
    await page.getByRole('link', { name: 'Account' }).click();
    await heading(page, 'Account').waitFor();
    await page.getByRole('table', { name: 'Members' }).waitFor();
    await expectAccessible(page, 'account');
    await page.getByRole('button', { name: 'Invite' }).click();
    const dialog = page.getByRole('dialog', { name: 'Invite someone' });
    await dialog.getByRole('radio', { name: /^Member/ }).check();
    await dialog.getByRole('button', { name: 'Create invitation link' }).click();
    state.invitationUrl = await dialog.getByLabel('Invitation link', { exact: true }).inputValue();
    expect(state.invitationUrl).toMatch(new RegExp(`^${origin}/console/invite/\\S+$`));
    await dialog.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('table', { name: 'Pending invitations' }).waitFor();

    memberContext = await newContext();
    member = await memberContext.newPage();
    await member.goto(state.invitationUrl);
    await heading(member, `Join ${OWNER.account}`).waitFor();
    await expectAccessible(member, 'invitation');
    await member.getByLabel('E-mail').fill(MEMBER.email);
    await member.getByLabel('Password', { exact: true }).fill(MEMBER.password);
    await member.getByRole('button', { name: 'Create account and join' }).click();

    await member.waitForURL(url('/api-keys'));
    await heading(member, 'API keys').waitFor();
    expect(await member.locator('.top-bar').textContent()).toContain(OWNER.account);
    await member.getByRole('row', { name: /reporting/ }).waitFor();
    await member.getByText('Only owners and admins can generate and revoke keys.').waitFor();
    expect(await member.getByRole('button', { name: 'Generate key' }).count()).toBe(0);
    expect(await member.getByRole('button', { name: /Revoke/ }).count()).toBe(0);
  });

  it('6. signs the member out: back at sign-in, and the old session cookie is worth nothing', async () => {
    const [cookie] = (await memberContext.cookies(url('/'))).filter((each) => each.name === 'convo_session');
    expect(cookie?.value).toBeTruthy();
    await member.getByRole('button', { name: 'Sign out' }).click();
    await member.waitForURL(url('/sign-in'));
    await heading(member, 'Sign in to Convo').waitFor();
    await member.goto(url('/api-keys'));
    await member.waitForURL(url('/sign-in'));
    await heading(member, 'Sign in to Convo').waitFor();
    const replay = await fetch(url('/trpc/session.get'), { headers: { cookie: `convo_session=${cookie?.value}` } });
    expect(await replay.json()).toEqual({ result: { data: null } });
    await memberContext.close();
  });

  it('7. generates and copies a key with the keyboard alone; focus goes into the dialog and back', async () => {
    await page.goto(url('/api-keys'));
    await heading(page, 'API keys').waitFor();
    await page.getByRole('row', { name: /reporting/ }).waitFor();
    const trigger = page.getByRole('button', { name: 'Generate key' });
    await tabTo(page, trigger);
    await page.keyboard.press('Enter');

    const dialog = page.getByRole('dialog', { name: 'Generate key' });
    await dialog.waitFor();
    // The dialog takes the focus once it has mounted, a moment after it shows.
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.closest('[role="dialog"]') != null), {
        message: 'focus is in the dialog',
        timeout: 5_000,
      })
      .toBe(true);
    await tabTo(page, dialog.getByLabel('Name'));
    await page.keyboard.type('keyboard');
    await page.keyboard.press('Tab');
    // The checked radio takes the focus; arrows move the choice, Space confirms it.
    expect(await isFocused(dialog.getByRole('radio', { name: /^Full access/ }))).toBe(true);
    await page.keyboard.press('ArrowDown');
    expect(await dialog.getByRole('radio', { name: /^Read-only/ }).isChecked()).toBe(true);
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Space');
    expect(await dialog.getByRole('radio', { name: /^Full access/ }).isChecked()).toBe(true);
    // Enter on a form's control submits the form (implicit submission).
    await page.keyboard.press('Enter');

    const shown = page.getByRole('dialog', { name: 'Your new key' });
    await shown.waitFor();
    state.keyboardKey = await shown.getByLabel('Key keyboard', { exact: true }).inputValue();
    expect(state.keyboardKey).toMatch(/^convo_sk_/);
    await tabTo(page, shown.getByRole('button', { name: 'Copy key keyboard' }));
    await page.keyboard.press('Enter');
    await page.getByText('Copied').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(state.keyboardKey);

    // Escape does not throw away a value shown once; Done does, and the focus returns to the trigger.
    await page.keyboard.press('Escape');
    expect(await shown.isVisible()).toBe(true);
    await tabTo(page, shown.getByRole('button', { name: 'Done' }));
    await page.keyboard.press('Enter');
    await shown.waitFor({ state: 'detached' });
    await expect.poll(() => isFocused(trigger), { timeout: 5_000 }).toBe(true);
    expect((await api('/conversations', state.keyboardKey)).status).toBe(200);
  });

  it('8. passes axe-core on the webhooks, a webhook endpoint and the channels', async () => {
    const created = await api('/webhook_endpoints', state.keyboardKey, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/hooks', events: ['*'], description: 'Local receiver' }),
    });
    expect(created.status).toBe(201);
    const endpoint = (await created.json()) as { id: string };

    await page.getByRole('link', { name: 'Webhooks' }).click();
    await heading(page, 'Webhooks').waitFor();
    await page.getByRole('link', { name: 'http://127.0.0.1:9/hooks' }).click();
    await page.waitForURL(url(`/webhooks/${endpoint.id}`));
    await heading(page, 'Webhook endpoint').waitFor();
    await page.getByText('Local receiver').waitFor();
    await loaded(page);
    await expectAccessible(page, 'webhook endpoint');
    await page.goBack();
    await heading(page, 'Webhooks').waitFor();
    await page.getByRole('table').waitFor();
    await loaded(page);
    await expectAccessible(page, 'webhooks');

    await page.getByRole('link', { name: 'Channels' }).click();
    await heading(page, 'Channels').waitFor();
    await page.getByText('No channels yet.').waitFor();
    await expectAccessible(page, 'channels');
  });

  it("9. sets a new password from the operator's one-time link, which then is used up", async () => {
    // What `convo-server users reset-password --email …` prints.
    const { token } = await peopleService.createPasswordReset({ database }, MEMBER.email);
    const link = url(`/reset-password/${token}`);
    const context = await newContext();
    const reset = await context.newPage();
    await reset.goto(link);
    await heading(reset, 'Choose a new password').waitFor();
    await expectAccessible(reset, 'reset password');
    await reset.getByLabel('New password').fill('a brand new password');
    await reset.getByRole('button', { name: 'Set password and sign in' }).click();
    await reset.waitForURL(url('/api-keys'));
    await heading(reset, 'API keys').waitFor();
    expect(await reset.locator('.top-bar').textContent()).toContain(MEMBER.email);

    await reset.goto(link);
    // Used: the server's 404 is the answer the page expects, no problem of the page's.
    expectedFailures.push('/trpc/session.resetPassword');
    await reset.getByLabel('New password').fill('yet another password');
    await reset.getByRole('button', { name: 'Set password and sign in' }).click();
    await reset.getByText('This link is used or expired; ask your operator for a new one.').waitFor();
    await context.close();
  });

  it('10. shows a conversation made through the API, its event, and answers it from the console', async () => {
    const made = await api('/sandbox/inbound', state.keyboardKey, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        platform: 'whatsapp',
        from: { phone: '+819012345678', name: 'Kenji Watanabe' },
        content: 'Do you ship to Osaka?',
      }),
    });
    expect(made.status).toBe(201);
    const { conversation_id: conversationId } = (await made.json()) as { conversation_id: string };

    await page.getByRole('link', { name: 'Conversations' }).click();
    await heading(page, 'Conversations').waitFor();
    await page.getByRole('link', { name: 'Kenji Watanabe' }).click();
    await page.waitForURL(url(`/conversations/${conversationId}`));
    await heading(page, 'Kenji Watanabe').waitFor();
    await page.getByText('Do you ship to Osaka?').waitFor();
    await loaded(page);
    await expectAccessible(page, 'a conversation');
    await page.getByLabel('Reply').fill('We do: two to three days by Yamato.');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('We do: two to three days by Yamato.').waitFor();
    const messages = (await (await api(`/conversations/${conversationId}/messages`, state.keyboardKey)).json()) as {
      data: { direction: string; content: string; status: string }[];
    };
    expect(messages.data).toContainEqual(
      expect.objectContaining({ direction: 'outbound', content: 'We do: two to three days by Yamato.' }),
    );
    // A photo attached to a reply: uploaded, sent by its file id, shown inline from the kept file.
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      'base64',
    );
    await page.getByLabel('Reply').fill('The box we ship in');
    await page.getByLabel(/Attach a file/).setInputFiles({ name: 'box.png', mimeType: 'image/png', buffer: png });
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByRole('img', { name: 'The image sent' }).waitFor();
    const withPhoto = (await (await api(`/conversations/${conversationId}/messages`, state.keyboardKey)).json()) as {
      data: { type: string; content: string; media: { status: string; filename?: string } | null }[];
    };
    expect(withPhoto.data).toContainEqual(
      expect.objectContaining({
        type: 'image',
        content: 'The box we ship in',
        media: expect.objectContaining({ status: 'stored', filename: 'box.png' }),
      }),
    );

    // The contact's page lists its conversations, each a way back to it.
    await page.getByRole('link', { name: 'Contacts' }).click();
    await heading(page, 'Contacts').waitFor();
    await page.getByRole('link', { name: 'Kenji Watanabe' }).click();
    await heading(page, 'Kenji Watanabe').waitFor();
    // Every read of the page answered before leaving it: one cut off by the navigation is no finding.
    await page.getByRole('heading', { level: 2, name: 'Orders' }).waitFor();
    await loaded(page);
    await page.getByRole('table', { name: 'Conversations' }).getByRole('link', { name: 'Kenji Watanabe' }).click();
    await page.waitForURL(url(`/conversations/${conversationId}`));

    await page.getByRole('link', { name: 'Events' }).click();
    await heading(page, 'Events').waitFor();
    await page.locator('summary', { hasText: 'message.received' }).first().waitFor();
    await loaded(page);
    await expectAccessible(page, 'events');
    // The page follows the live stream: an event made now through the API appears without a reload.
    await page.getByText('Live: new events appear as they happen.').waitFor();
    const contact = await api('/contacts', state.keyboardKey, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phone: '+819012345679', name: 'Aiko Watanabe' }),
    });
    expect(contact.status).toBe(201);
    const { id: contactId } = (await contact.json()) as { id: string };
    const [created] = (
      (await (await api('/events?type=contact.created&limit=1', state.keyboardKey)).json()) as {
        data: { id: string; data: { id: string } }[];
      }
    ).data;
    expect(created?.data.id).toBe(contactId);
    await page.locator('summary', { hasText: created?.id as string }).waitFor();
    await loaded(page);

    // The call is in the request log, and a failed one opens from its request id with its error.
    const refused = await api('/contacts', state.keyboardKey, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ phone: 'not a phone' }),
    });
    expect(refused.status).toBe(400);
    await page.getByRole('link', { name: 'Logs' }).click();
    await heading(page, 'Logs').waitFor();
    await page.getByRole('link', { name: 'POST /v1/sandbox/inbound' }).waitFor({ timeout: 20_000 });
    // The page reads the log again every few seconds: the refused call shows up without a reload.
    const requestId = refused.headers.get('x-request-id') as string;
    await page.locator(`a[href$="/logs/${requestId}"]`).waitFor({ timeout: 20_000 });
    await expectAccessible(page, 'logs');
    await page.goto(url(`/logs/${requestId}`));
    await heading(page, `Request ${requestId}`).waitFor();
    await page.getByText('"field": "phone"').waitFor();
  });

  it('11. the CSP held throughout, and a violation would have been seen', async () => {
    expect(problems).toEqual([]);
    // The watch works: an inline script, which the CSP refuses, is reported.
    const probe = await owner.newPage();
    await probe.goto(url('/api-keys'));
    await heading(probe, 'API keys').waitFor();
    await probe.evaluate(() => {
      const script = document.createElement('script');
      script.textContent = 'window.inlineRan = true';
      document.head.append(script);
    });
    await expect
      .poll(() => problems.filter((problem) => problem.kind === 'csp').length, { timeout: 5_000 })
      .toBeGreaterThan(0);
    expect(await probe.evaluate(() => 'inlineRan' in window)).toBe(false);
    expect(problems.find((problem) => problem.kind === 'csp')?.text).toContain('script-src');
    await probe.close();
  });
});
