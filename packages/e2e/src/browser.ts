import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

/** Debian's chromium (`.ci/run` installs it when missing); playwright downloads no browser here. */
export const CHROMIUM = '/usr/bin/chromium';

/** Whether a browser test can run: under CI=true a missing chromium fails the run, elsewhere it skips with a warning. */
export function chromiumAvailable(what: string): boolean {
  const available = existsSync(CHROMIUM);
  if (!available && process.env.CI === 'true')
    throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y chromium)`);
  if (!available) console.warn(`skipping ${what}: no ${CHROMIUM}`);
  return available;
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  nodes: { target: string[] }[];
}

/**
 * axe-core on the page as it is, color contrast included (a real layout): how many rules passed, and the serious
 * and critical findings with their rule and where. The source goes in through page.evaluate, which the page's CSP
 * (`script-src 'self'`) does not govern; a <script> tag would be refused.
 */
export async function axeFindings(page: Page): Promise<{ passed: number; violations: string[] }> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const { axe } = window as unknown as {
      axe: { run: (context: Document) => Promise<{ passes: unknown[]; violations: AxeViolation[] }> };
    };
    const results = await axe.run(document);
    return {
      passed: results.passes.length,
      violations: results.violations
        .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
        .map(
          (violation) =>
            `${violation.id} (${violation.impact}): ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
        ),
    };
  });
}
