/**
 * `node dist/fake-graph-api.js [--port 4010] [--host 127.0.0.1]`: runs the fake Graph API on its own, so a developer
 * can point a local Convo at it (`CONVO_GRAPH_API_URL`) and drive the Meta loop by hand with curl.
 */
import { parseArgs } from 'node:util';
import { startFakeGraphApi } from './fake-graph-api.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '4010' },
    host: { type: 'string', default: '127.0.0.1' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const usage = (url: string) => `Fake Meta Graph API listening on ${url}

Point Convo at it:   CONVO_GRAPH_API_URL=${url}
Sends arrive at:     POST ${url}/v21.0/{external_id}/messages   (any vNN.N, Authorization: Bearer <token>)

Control API:
  Register a channel (its token, app secret and Convo's webhook address):
    curl -s -X POST ${url}/_fake/connect -H 'content-type: application/json' -d '{
      "platform": "whatsapp", "externalId": "106540352242922", "accessToken": "test-token",
      "appSecret": "test-secret", "webhookUrl": "http://127.0.0.1:3000/hooks/meta/<channel_id>",
      "statusesAfterSend": ["sent", "delivered", "read"] }'
  Have a customer write to it (posts the signed inbound webhook; answers with Convo's status):
    curl -s -X POST ${url}/_fake/inbound -H 'content-type: application/json' \\
      -d '{"external_id": "106540352242922", "from": "16505551234", "name": "Sheena Nelson", "text": "Hello"}'
  Give a WhatsApp Business Account its message templates (GET /{waba}/message_templates pages them):
    curl -s -X POST ${url}/_fake/templates -H 'content-type: application/json' -d '{
      "business_account_id": "102290129340398", "access_token": "test-token",
      "templates": [{"name": "order_shipped", "language": "en_US", "status": "APPROVED",
                     "category": "UTILITY", "components": [{"type": "BODY", "text": "Hi {{1}}"}]}] }'
  See what Convo sent:
    curl -s ${url}/_fake/sent
`;

if (values.help) {
  process.stdout.write(usage(`http://${values.host}:${values.port}`));
  process.exit(0);
}

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`--port must be a port number, got ${values.port}\n`);
  process.exit(2);
}

const fake = await startFakeGraphApi({ port, host: values.host });
process.stdout.write(usage(fake.url));

const stop = () => {
  fake.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
