import { existsSync } from 'node:fs';
import { buildOpenApiDocument } from '@convo/core';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderDocsPage } from './docs-page.js';

/** Debian's chromium (`.ci/run` installs it when missing); playwright downloads no browser here. */
const CHROMIUM = '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
if (!available && process.env.CI === 'true')
  throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`);
if (!available) console.warn(`skipping the /docs browser test: no ${CHROMIUM}`);

describe.skipIf(!available)('the /docs page in a browser', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('reads on a 390 px wide phone: nothing wider than the screen, wide tables scroll within themselves', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.setContent(renderDocsPage(buildOpenApiDocument()));
    // A string: the api's TypeScript has no DOM types, the page's script runs in the browser.
    const widths = (await page.evaluate(
      '({ document: document.documentElement.scrollWidth, widest: Math.max(...[...document.body.children].map((e) => e.getBoundingClientRect().right)) })',
    )) as { document: number; widest: number };
    expect(widths.document).toBeLessThanOrEqual(390);
    expect(widths.widest).toBeLessThanOrEqual(390);
    await page.close();
  });
});
