/**
 * Every page of the console, as data: app.tsx renders a page for each (the build fails on a route without one), and
 * packages/e2e/src/console-routes.browser.test.ts visits each at a phone's and a desktop's width, so a page added here
 * is tested without anyone listing it again. `signedIn` pages sit in the console's layout; the others stand alone.
 */
export const CONSOLE_ROUTES = [
  { path: '/sign-in', signedIn: false },
  { path: '/sign-up', signedIn: false },
  { path: '/invite/:token', signedIn: false },
  { path: '/reset-password/:token', signedIn: false },
  { path: '/conversations', signedIn: true },
  { path: '/conversations/:id', signedIn: true },
  { path: '/contacts', signedIn: true },
  { path: '/contacts/:id', signedIn: true },
  { path: '/events', signedIn: true },
  { path: '/workflows', signedIn: true },
  { path: '/workflows/:id', signedIn: true },
  { path: '/logs', signedIn: true },
  { path: '/logs/:request_id', signedIn: true },
  { path: '/api-keys', signedIn: true },
  { path: '/webhooks', signedIn: true },
  { path: '/webhooks/:id', signedIn: true },
  { path: '/channels', signedIn: true },
  { path: '/account', signedIn: true },
] as const;

export type ConsolePath = (typeof CONSOLE_ROUTES)[number]['path'];
