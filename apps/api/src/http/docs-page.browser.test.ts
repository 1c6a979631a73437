import { existsSync } from 'node:fs';
import { buildOpenApiDocument } from '@convo/core';
import { type Browser, type Page, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestServer, startTestServer } from '../testing/harness.js';

/** Debian's chromium (`.ci/run` installs it when missing); playwright downloads no browser here. */
const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true')
  throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`);
if (!available) console.warn(`skipping the /docs browser test: no ${CHROMIUM}`);

/** An operation whose summary the rendered page must show, and which takes the Idempotency-Key header. */
const createContact = buildOpenApiDocument().paths['/v1/contacts']?.post as { summary: string };

interface Layout {
  viewport: number;
  documentWidth: number;
  widestChild: number;
  names: number;
  brokenNames: string[];
}

/**
 * The page's widths, and the names that take more than one line: those of parameters, headers and fields in Redoc's
 * tables (`.property-name`) and the one-word inline code of descriptions (`Retry-After`). A name is one word, and a
 * second line box means it was broken inside.
 */
const LAYOUT = `(() => {
  const names = [...document.querySelectorAll('.property-name, :not(pre) > code')]
    .filter((e) => e.getClientRects().length > 0 && !/\\s/.test(e.textContent));
  const broken = names.filter((e) => {
    const lineHeight = parseFloat(getComputedStyle(e).lineHeight) || parseFloat(getComputedStyle(e).fontSize) * 1.5;
    return e.getClientRects().length > 1 || e.getBoundingClientRect().height > lineHeight * 1.5;
  });
  return {
    viewport: window.innerWidth,
    documentWidth: document.documentElement.scrollWidth,
    widestChild: Math.max(...[...document.body.children].map((e) => e.getBoundingClientRect().right)),
    names: names.length,
    brokenNames: [...new Set(broken.map((e) => e.textContent))],
  };
})()`;

describe.skipIf(!available)('the /docs page in a browser', () => {
  let browser: Browser;
  let server: TestServer;
  beforeAll(async () => {
    [browser, server] = await Promise.all([
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
      startTestServer('sqlite'),
    ]);
  });
  afterAll(async () => {
    await Promise.all([browser?.close(), server?.close()]);
  });

  /** Opens /docs at a size and waits until Redoc has rendered the document's operations. */
  async function openDocs(width: number, height: number): Promise<{ page: Page; refused: string[] }> {
    const page = await browser.newPage({ viewport: { width, height } });
    const refused: string[] = [];
    page.on('console', (message) => {
      if (message.text().includes('Content Security Policy')) refused.push(message.text());
    });
    await page.goto(new URL('/docs', server.baseUrl).href);
    await page.locator('h2', { hasText: createContact.summary }).first().waitFor({ state: 'attached' });
    return { page, refused };
  }

  it.each([
    [390, 844],
    [1280, 800],
  ])('reads at %i×%i: no horizontal overflow, no name broken over two lines', async (width, height) => {
    const { page, refused } = await openDocs(width, height);
    await page
      .locator('.property-name', { hasText: /^Idempotency-Key$/ })
      .first()
      .waitFor({ state: 'attached' });
    expect(await page.locator('input.search-input').count(), 'the search box').toBe(1);
    // The schemas' nullables and unions, as Redoc words them.
    expect(await page.getByText('string or null').count()).toBeGreaterThan(0);
    expect(await page.getByText('One of', { exact: false }).count()).toBeGreaterThan(0);

    const layout = (await page.evaluate(LAYOUT)) as Layout;
    expect(layout.documentWidth, 'the document scrolls sideways').toBeLessThanOrEqual(width);
    expect(layout.widestChild).toBeLessThanOrEqual(width);
    expect(layout.names, 'names of parameters and fields are on the page').toBeGreaterThan(100);
    expect(layout.brokenNames).toEqual([]);
    // The renderer's script, styles, worker and document all passed the CSP; only its remote logo is refused.
    expect(refused.filter((message) => !/^Loading the image 'https:/.test(message))).toEqual([]);
    await page.close();
  });

  it('finds an operation with the search box, which runs in a worker the CSP admits', async () => {
    const { page } = await openDocs(1280, 800);
    await page.locator('input.search-input').fill('contact');
    await page
      .locator('[data-role="search:results"]')
      .getByText(createContact.summary, { exact: true })
      .first()
      .waitFor();
    await page.close();
  });
});
