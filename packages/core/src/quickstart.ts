/**
 * The first section of the OpenAPI document's description: the base URL of the server that serves it, where a key
 * comes from, the first call in each client, and how to verify a webhook. The first call's blocks are run as written
 * by packages/e2e/src/quickstart.test.ts, so they stay true.
 */

/** The server a document without a known origin describes: the SDKs' and the CLI's default. */
export const DEFAULT_ORIGIN = 'http://127.0.0.1:3000';

/** The quickstart's runnable blocks, by client: each lists the active conversations. */
export function firstCalls(origin: string = DEFAULT_ORIGIN) {
  const base = `${origin}/v1`;
  return {
    curl: `curl "${base}/conversations?status=active&limit=5" -H "Authorization: Bearer $CONVO_API_KEY"`,
    typescript: [
      "import { Convo } from '@convo/sdk';",
      '',
      `const convo = new Convo({ baseUrl: '${base}' }); // the key from CONVO_API_KEY`,
      "const page = await convo.conversations.list({ status: 'active', limit: 5 });",
      'for (const conversation of page.data) console.log(conversation.id, conversation.contact.name);',
    ].join('\n'),
    python: [
      'import convo',
      '',
      `client = convo.Client(base_url="${base}")  # the key from CONVO_API_KEY`,
      'for conversation in client.conversations.list(status="active", limit=5).data:',
      '    print(conversation["id"], conversation["contact"]["name"])',
    ].join('\n'),
    cli: `convo conversations list --status active --limit 5 --base-url ${base}`,
  };
}

/** Markdown, for `info.description`. */
export function quickstart(origin: string = DEFAULT_ORIGIN): string {
  const calls = firstCalls(origin);
  const block = (lang: string, code: string) => `\`\`\`${lang}\n${code}\n\`\`\``;
  return [
    '## Quickstart',
    `**Base URL**: \`${origin}/v1\`. Every request carries an API key: \`Authorization: Bearer <key>\`.`,
    `**A key**: sign in to the console (\`${origin}/console/\`), open API keys and create one (its value is shown ` +
      'once); or, on the server, `convo-server keys create --account acct_… --type full_access --name backend`. ' +
      '`pnpm start` prints a demo account and its key. The SDKs and the CLI read it from the environment:',
    block('sh', `export CONVO_API_KEY=convo_sk_…\nexport CONVO_BASE_URL=${origin}/v1`),
    '**The first call**, the active conversations, with curl:',
    block('sh', calls.curl),
    'With the TypeScript SDK (`@convo/sdk`, no dependencies; until it is published, `pnpm --filter @convo/sdk pack` ' +
      'in the repository makes the tarball to `npm install`):',
    block('js', calls.typescript),
    'With the Python library (`convo`, standard library only; `pip install packages/sdk-python` from the repository):',
    block('python', calls.python),
    'With the CLI (`node packages/cli/bin/convo.js` from the repository, or `npm link` it as `convo`):',
    block('sh', calls.cli),
    'Lists answer `{data, total, limit, offset, has_more}`; the SDKs also iterate every page ' +
      '(`for await` in TypeScript, a plain `for` over the page in Python). Writes (`POST`) take an `Idempotency-Key`: ' +
      'the SDKs send one on every POST, the same on its retries.',
    '**Webhooks on a laptop**: no public address needed while you build the handler. `convo listen` prints a ' +
      "signing secret, follows the account's events (`GET /v1/events/stream`) and POSTs each to your handler as " +
      'Convo would deliver it, signed with that secret, printing a line per event with your answer:',
    block(
      'sh',
      `convo listen --forward-to http://localhost:4000/hooks --events message.received,conversation.resolved`,
    ),
    '**Webhooks**: an endpoint (`POST /v1/webhook_endpoints`) receives each event signed the Standard Webhooks way ' +
      '(`webhook-id`, `webhook-timestamp`, `webhook-signature`) with a webhook key (`whsec_…`, shown when the ' +
      "account's first endpoint is created). Verify the raw body before trusting it:",
    block(
      'js',
      "import { verifyWebhook } from '@convo/sdk';\n" +
        'const event = await verifyWebhook(rawBody, request.headers, process.env.CONVO_WEBHOOK_SECRET);',
    ),
    block(
      'python',
      'import convo\nevent = convo.verify_webhook(raw_body, headers, os.environ["CONVO_WEBHOOK_SECRET"])  ' +
        '# raises convo.WebhookVerificationError',
    ),
    'Both refuse a wrong signature and a timestamp more than five minutes away.',
    '**Live events** without a webhook: `GET /v1/events/stream` (Server-Sent Events), in the SDKs ' +
      "`for await (const event of convo.events.stream({ type: 'message.received' }))` and " +
      '`for event in client.events.stream(type="message.received"):`, which reconnect with `Last-Event-ID` and ' +
      'so miss nothing.',
    '## Conventions',
  ].join('\n\n');
}
