import { describe, expect, it } from 'vitest';
import { isPublicAddress, publicOnlyLookup, webhookUrlProblem } from './webhook-addresses.js';

describe('isPublicAddress', () => {
  it.each(['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '2a00:1450:4001:82a::200e'])('allows %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '100.64.0.1',
    '224.0.0.251',
    '255.255.255.255',
    '240.0.0.1',
    '192.0.2.1',
    '::',
    '::1',
    '[::1]',
    'fe80::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
    '::7f00:1',
    '::a00:1',
    '::808:808',
    'not an address',
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});

describe('webhookUrlProblem', () => {
  it('allows anything parsable when private webhooks are allowed', async () => {
    expect(await webhookUrlProblem('http://127.0.0.1:8080/hook', { allowPrivate: true })).toBeUndefined();
  });

  it('needs https and a public host otherwise', async () => {
    // Says what this mode accepts: where plain http is accepted, the problem is never http itself.
    expect(await webhookUrlProblem('http://93.184.215.14/hook', { allowPrivate: false })).toBe(
      'Must be an https URL: this server accepts no plain http',
    );
    expect(await webhookUrlProblem('not a url', { allowPrivate: false })).toBe('Must be an absolute https URL');
    expect(await webhookUrlProblem('https://10.0.0.1/hook', { allowPrivate: false })).toMatch(/address/);
    expect(await webhookUrlProblem('https://[fe80::1]/hook', { allowPrivate: false })).toMatch(/address/);
    expect(await webhookUrlProblem('https://localhost:8443/hook', { allowPrivate: false })).toMatch(
      /localhost resolves/,
    );
    expect(await webhookUrlProblem('https://93.184.215.14/hook', { allowPrivate: false })).toBeUndefined();
    expect(await webhookUrlProblem('https://[2606:4700:4700::1111]/hook', { allowPrivate: false })).toBeUndefined();
    expect(await webhookUrlProblem('https://[::7f00:1]/hook', { allowPrivate: false })).toMatch(/address/);
    // A name that does not resolve now is left to the check at delivery time.
    expect(await webhookUrlProblem('https://no-such-host.invalid/hook', { allowPrivate: false })).toBeUndefined();
  });
});

describe('publicOnlyLookup', () => {
  const lookup = (host: string, all: boolean) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
      publicOnlyLookup(host, { all }, (error, address) => resolve({ error, address })),
    );

  it('refuses a host that resolves to a loopback address, in both callback forms', async () => {
    for (const all of [false, true]) {
      const { error } = await lookup('localhost', all);
      expect(error?.message).toMatch(/non-public address/);
    }
  });
});
