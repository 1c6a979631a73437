/**
 * The one story every example of the OpenAPI document tells: Tostado, a coffee roaster that sells on WhatsApp.
 * Its records are typed by the contract's own types, so an example that drifts from its schema fails the build;
 * openapi.test.ts also checks them against the contract's invariants.
 */
import type { Channel, WhatsAppTemplate } from './channels.js';
import type { Contact } from './contacts.js';
import type { Conversation } from './conversations.js';
import type { OperationId } from './endpoints.js';
import type { ErrorBody } from './errors.js';
import type { Event } from './events.js';
import type { File } from './files.js';
import type { Message } from './messages.js';
import type { Order } from './orders.js';
import type { Tag } from './tags.js';
import type { WebhookDelivery, WebhookEndpoint } from './webhooks.js';
import type { Workflow, WorkflowRun } from './workflows.js';

/** The story's ids: fixed, so a request example names a record a response example shows. */
export const STORY_IDS = {
  whatsappChannel: 'ch_01M7W2Y7M0RHQ3FMQRFH0NMFWW',
  instagramChannel: 'ch_01M83FTSR0JZX8HW3BH2DEJNAP',
  marta: 'ct_01M7WD7TG00WYJ727JN2B2EHWP',
  jonas: 'ct_01M7WQHDC0TVBEMBB1BN6H1V6W',
  kenji: 'ct_01M835H6W0MTVY2T4VRS3GJ70J',
  martaConversation: 'conv_01M7X1V0806K27T8YN8DHN612X',
  jonasConversation: 'conv_01M82V7M00NKTRDDRNZN09RS43',
  martaQuestion: 'msg_01M7XC4K40TBQ97YYSJXBP4ZF0',
  shopAnswer: 'msg_01M7XPE600WNGFYBT8R38VFZ7A',
  shippingNote: 'msg_01M82GY140XY0W0FMJR4Y1E752',
  jonasQuestion: 'msg_01M826ME80W0T5QA3KXF1J705Y',
  martaOrder: 'ord_01M7Y0QRW0ASWNY2QKTGP7DXV3',
  jonasOrder: 'ord_01M81WAVC0AHEHQ0EX9F8NEYRY',
  thankYouWorkflow: 'wf_01M7YB1BR02978Q99HPZKCPPCP',
  reviewWorkflow: 'wf_01M81J18G06FH5D05YSV8DR7EJ',
  thankYouRun: 'run_01M7YNAYM021PFWK9YX3YSWSAF',
  orderPlaced: 'evt_01M7YZMHG0MZXPFH2YPD3PE7PX',
  fulfilmentEndpoint: 'whe_01M7Z9Y4C0527SZ4JK66W5M3VM',
  crmEndpoint: 'whe_01M817QNM0K73YRSMHVWQVSFDE',
  orderPlacedDelivery: 'whd_01M7ZM7Q80KHPBQ8Z9DKE91YBT',
  pingDelivery: 'whd_01M80XE2R0HJFMT8J3FXYYMJ24',
  ping: 'evt_01M80K4FW02VHH68J6QEGSR70S',
  receipt: 'file_01M7Y2K3E0Q8R6S5T4V3W2X1Y0',
} as const;
const ID = STORY_IDS;

/**
 * Where the story's server is reached; buildOpenApiDocument puts the serving server's address in its place.
 */
export const STORY_ORIGIN = 'http://127.0.0.1:3000';

const whatsappChannel: Channel = {
  id: ID.whatsappChannel,
  platform: 'whatsapp',
  name: 'Tostado WhatsApp',
  external_id: '106540352242922',
  status: 'active',
  business_account_id: '102290129340398',
  webhook_url: `${STORY_ORIGIN}/hooks/meta/${ID.whatsappChannel}`,
  verify_token: 'roast-Q8sd7f6g5h4j3k2l',
  last_error: null,
  created_at: '2026-11-20T09:00:00.000Z',
  updated_at: '2026-11-20T09:00:00.000Z',
};

/** The roaster's approved WhatsApp templates, as Meta lists them: a shipping notice in English and Portuguese. */
export const STORY_TEMPLATES: WhatsAppTemplate[] = [
  {
    name: 'order_shipped',
    language: 'en_US',
    status: 'APPROVED',
    category: 'UTILITY',
    components: [
      { type: 'BODY', text: 'Hi {{1}}, order {{2}} has left the roastery and arrives in two days.' },
      { type: 'FOOTER', text: 'Tostado Coffee Roasters' },
    ],
  },
  {
    name: 'order_shipped',
    language: 'pt_BR',
    status: 'APPROVED',
    category: 'UTILITY',
    components: [
      { type: 'BODY', text: 'Olá {{1}}, o pedido {{2}} saiu da torrefação e chega em dois dias.' },
      { type: 'FOOTER', text: 'Tostado Coffee Roasters' },
    ],
  },
];

const marta: Contact = {
  id: ID.marta,
  name: 'Marta Oliveira',
  phone: '+5511987654321',
  email: 'marta.oliveira@example.com',
  tags: ['vip', 'wholesale'],
  attributes: { city: 'São Paulo', loyalty_points: 320 },
  identities: [{ platform: 'whatsapp', channel_id: ID.whatsappChannel, external_id: '5511987654321' }],
  created_at: '2026-11-20T12:00:00.000Z',
  updated_at: '2026-11-20T12:00:00.000Z',
};

const jonas: Contact = {
  id: ID.jonas,
  name: 'Jonas Becker',
  phone: '+4915123456789',
  email: null,
  tags: ['newsletter'],
  attributes: { city: 'Berlin' },
  identities: [],
  created_at: '2026-11-20T15:00:00.000Z',
  updated_at: '2026-11-20T15:00:00.000Z',
};

const martaConversation: Conversation = {
  id: ID.martaConversation,
  contact: { id: ID.marta, name: marta.name, phone: marta.phone },
  platform: 'whatsapp',
  channel_id: ID.whatsappChannel,
  status: 'active',
  message_count: 2,
  last_message: {
    content: 'Yes, both are roasted this week: 250 g bags at $16.50. Shall I put two aside with a V60?',
    timestamp: '2026-11-21T00:04:12.000Z',
  },
  created_at: '2026-11-20T18:00:00.000Z',
  updated_at: '2026-11-21T00:04:12.000Z',
};

const martaQuestion: Message = {
  id: ID.martaQuestion,
  conversation_id: ID.martaConversation,
  direction: 'inbound',
  type: 'text',
  content: 'Hi! Do you still have the Ethiopia Yirgacheffe in 250 g bags?',
  status: 'delivered',
  platform_message_id: 'wamid.HBgNNTUxMTk4NzY1NDMyMRUCABIYFjNFQjBDMEE3RjU2QTk4QzVBRjZFRTMA',
  error: null,
  media: null,
  created_at: '2026-11-20T21:00:00.000Z',
  updated_at: '2026-11-20T21:00:00.000Z',
};

const shopAnswer: Message = {
  id: ID.shopAnswer,
  conversation_id: ID.martaConversation,
  direction: 'outbound',
  type: 'text',
  content: 'Yes, both are roasted this week: 250 g bags at $16.50. Shall I put two aside with a V60?',
  status: 'read',
  platform_message_id: 'wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYEjk4QTdCNkM1RDRFM0YyQTFCMAA=',
  error: null,
  media: null,
  created_at: '2026-11-21T00:04:12.000Z',
  updated_at: '2026-11-21T00:09:40.000Z',
};

const martaOrder: Order = {
  id: ID.martaOrder,
  contact_id: ID.marta,
  number: '1042',
  status: 'pending',
  currency: 'USD',
  total_amount: 5700,
  items: [
    { name: 'Ethiopia Yirgacheffe, 250 g', quantity: 2, unit_amount: 1650 },
    { name: 'Hario V60 dripper, size 02', quantity: 1, unit_amount: 2400 },
  ],
  placed_at: '2026-11-21T03:00:00.000Z',
  created_at: '2026-11-21T03:00:00.000Z',
  updated_at: '2026-11-21T03:00:00.000Z',
};

const thankYouWorkflow: Workflow = {
  id: ID.thankYouWorkflow,
  name: 'Thank buyers when their order is paid',
  steps: [
    {
      type: 'send_message',
      content: 'Thank you, {{contact.name}}! Order {{data.order_number}} is paid and leaves the roastery tomorrow.',
    },
    { type: 'add_tag', tag: 'customer' },
  ],
  enabled: true,
  trigger: { event: 'order.updated', conditions: [{ field: 'status', op: 'eq', value: 'paid' }] },
  created_at: '2026-11-21T06:00:00.000Z',
  updated_at: '2026-11-21T06:00:00.000Z',
};

const thankYouRun: WorkflowRun = {
  id: ID.thankYouRun,
  workflow_id: ID.thankYouWorkflow,
  contact_id: ID.marta,
  event_id: null,
  status: 'queued',
  data: { order_number: '1042' },
  steps: [
    { index: 0, type: 'send_message', status: 'pending', error: null },
    { index: 1, type: 'add_tag', status: 'pending', error: null },
  ],
  error: null,
  created_at: '2026-11-21T09:00:00.000Z',
  started_at: null,
  finished_at: null,
};

const fulfilmentEndpoint: WebhookEndpoint = {
  id: ID.fulfilmentEndpoint,
  url: 'https://roastery.tostado.example/webhooks/convo',
  events: ['order.placed', 'order.updated'],
  description: 'Fulfilment: pack and ship paid orders',
  status: 'enabled',
  created_at: '2026-11-20T10:00:00.000Z',
  updated_at: '2026-11-20T10:00:00.000Z',
};

const orderPlaced: Event = {
  id: ID.orderPlaced,
  type: 'order.placed',
  created_at: '2026-11-21T03:00:00.000Z',
  data: martaOrder,
};

const orderPlacedDelivery: WebhookDelivery = {
  id: ID.orderPlacedDelivery,
  event_id: ID.orderPlaced,
  event_type: 'order.placed',
  endpoint_id: ID.fulfilmentEndpoint,
  status: 'failed',
  attempts: [
    { at: '2026-11-21T03:00:00.412Z', status_code: 503, duration_ms: 118, error: 'HTTP 503' },
    { at: '2026-11-21T03:00:05.530Z', status_code: null, duration_ms: 10000, error: 'timeout' },
  ],
  next_attempt_at: null,
  created_at: '2026-11-21T03:00:00.000Z',
};

const tags: Tag[] = [
  { name: 'newsletter', contact_count: 1 },
  { name: 'vip', contact_count: 1 },
  { name: 'wholesale', contact_count: 1 },
];

/** The story's records as they stand before any example request changes them. */
/** The receipt Tostado sends Marta for her order. */
const receipt: File = {
  id: ID.receipt,
  filename: 'receipt-1042.pdf',
  mime_type: 'application/pdf',
  size: 48213,
  sha256: '3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b',
  created_at: '2026-11-21T16:05:00.000Z',
};

export const story = {
  files: [receipt],
  channels: [whatsappChannel],
  contacts: [jonas, marta],
  conversations: [martaConversation],
  messages: [martaQuestion, shopAnswer],
  orders: [martaOrder],
  workflows: [thankYouWorkflow],
  workflowRuns: [thankYouRun],
  events: [orderPlaced],
  webhookEndpoints: [fulfilmentEndpoint],
  webhookDeliveries: [orderPlacedDelivery],
  tags,
} as const;

/** A page holding all of `data`: the first, and the last. */
const page = <T>(data: T[], limit = 20) => ({ data, total: data.length, limit, offset: 0, has_more: false });

/** What an example request sends: path parameters, query and body, each as the contract accepts it. */
export interface RequestExample {
  params?: Record<string, string>;
  query?: Record<string, string | number | boolean>;
  body?: Record<string, unknown>;
}
export interface OperationExample {
  request: RequestExample;
  /** The answer to that request, with the success status; undefined for a 204. */
  response?: unknown;
}

const NOW = '2026-11-22T10:15:30.123Z';

/** One example per operation of the endpoint table: a request of the story and its answer. */
export const operationExamples: Record<OperationId, OperationExample> = {
  'conversations.list': {
    request: { query: { status: 'active', limit: 20 } },
    response: page([martaConversation]),
  },
  'conversations.create': {
    request: { body: { contact_id: ID.jonas, platform: 'whatsapp' } },
    response: {
      id: ID.jonasConversation,
      contact: { id: ID.jonas, name: jonas.name, phone: jonas.phone },
      platform: 'whatsapp',
      channel_id: null,
      status: 'active',
      message_count: 0,
      last_message: null,
      created_at: NOW,
      updated_at: NOW,
    } satisfies Conversation,
  },
  'conversations.retrieve': { request: { params: { id: ID.martaConversation } }, response: martaConversation },
  'conversations.update': {
    request: { params: { id: ID.martaConversation }, body: { status: 'resolved' } },
    response: { ...martaConversation, status: 'resolved', updated_at: NOW } satisfies Conversation,
  },
  'conversations.listMessages': {
    request: { params: { id: ID.martaConversation }, query: { limit: 20 } },
    response: page([martaQuestion, shopAnswer]),
  },
  'messages.send': {
    request: {
      body: {
        conversation_id: ID.martaConversation,
        content: 'Order 1042 is packed: two Yirgacheffe bags and a V60. It ships tomorrow morning.',
      },
    },
    response: {
      id: ID.shippingNote,
      conversation_id: ID.martaConversation,
      direction: 'outbound',
      type: 'text',
      content: 'Order 1042 is packed: two Yirgacheffe bags and a V60. It ships tomorrow morning.',
      status: 'queued',
      platform_message_id: null,
      error: null,
      media: null,
      created_at: NOW,
      updated_at: NOW,
    } satisfies Message,
  },
  'messages.retrieve': { request: { params: { id: ID.martaQuestion } }, response: martaQuestion },
  // The path of a file on the caller's machine: every client sends its bytes as the `file` part.
  'files.create': { request: { body: { file: 'receipt-1042.pdf' } }, response: receipt },
  'files.retrieve': { request: { params: { id: ID.receipt } }, response: receipt },
  'files.content': { request: { params: { id: ID.receipt } }, response: receipt },
  'contacts.list': { request: { query: { tag: 'vip', limit: 20 } }, response: page([marta]) },
  'contacts.create': {
    request: {
      body: {
        name: 'Kenji Watanabe',
        phone: '+819012345678',
        email: 'kenji.watanabe@example.com',
        tags: ['newsletter'],
        attributes: { city: 'Osaka' },
      },
    },
    response: {
      id: ID.kenji,
      name: 'Kenji Watanabe',
      phone: '+819012345678',
      email: 'kenji.watanabe@example.com',
      tags: ['newsletter'],
      attributes: { city: 'Osaka' },
      identities: [],
      created_at: NOW,
      updated_at: NOW,
    } satisfies Contact,
  },
  'contacts.retrieve': { request: { params: { id: ID.marta } }, response: marta },
  'contacts.update': {
    request: {
      params: { id: ID.marta },
      body: { email: 'marta@cafeoliveira.example', attributes: { city: 'Campinas', loyalty_points: 320 } },
    },
    response: {
      ...marta,
      email: 'marta@cafeoliveira.example',
      attributes: { city: 'Campinas', loyalty_points: 320 },
      updated_at: NOW,
    } satisfies Contact,
  },
  'contacts.delete': { request: { params: { id: ID.jonas } } },
  'contacts.tags.add': {
    request: { params: { id: ID.marta }, body: { tag: 'subscriber' } },
    response: { ...marta, tags: [...marta.tags, 'subscriber'], updated_at: NOW } satisfies Contact,
  },
  'contacts.tags.remove': {
    request: { params: { id: ID.marta, tag: 'wholesale' } },
    response: { ...marta, tags: ['vip'], updated_at: NOW } satisfies Contact,
  },
  'tags.list': { request: { query: { limit: 20 } }, response: page(tags) },
  'tags.update': {
    request: { params: { tag: 'wholesale' }, body: { name: 'reseller' } },
    response: { name: 'reseller', contact_count: 1 } satisfies Tag,
  },
  'tags.delete': { request: { params: { tag: 'newsletter' } } },
  'orders.list': { request: { query: { contact_id: ID.marta, limit: 20 } }, response: page([martaOrder]) },
  'orders.create': {
    request: {
      body: {
        contact_id: ID.jonas,
        currency: 'USD',
        items: [
          { name: 'Colombia Huila, 1 kg', quantity: 1, unit_amount: 4800 },
          { name: 'Paper filters, pack of 100', quantity: 2, unit_amount: 650 },
        ],
      },
    },
    response: {
      id: ID.jonasOrder,
      contact_id: ID.jonas,
      number: '1043',
      status: 'pending',
      currency: 'USD',
      total_amount: 6100,
      items: [
        { name: 'Colombia Huila, 1 kg', quantity: 1, unit_amount: 4800 },
        { name: 'Paper filters, pack of 100', quantity: 2, unit_amount: 650 },
      ],
      placed_at: NOW,
      created_at: NOW,
      updated_at: NOW,
    } satisfies Order,
  },
  'orders.retrieve': { request: { params: { id: ID.martaOrder } }, response: martaOrder },
  'orders.update': {
    request: { params: { id: ID.martaOrder }, body: { status: 'paid' } },
    response: { ...martaOrder, status: 'paid', updated_at: NOW } satisfies Order,
  },
  'workflows.list': { request: { query: { limit: 20 } }, response: page([thankYouWorkflow]) },
  'workflows.create': {
    request: {
      body: {
        name: 'Ask for a review a week after delivery',
        steps: [
          { type: 'wait', seconds: 604800 },
          {
            type: 'send_message',
            content: 'Hi {{contact.name}}, how is the coffee? A short review helps our small roastery a lot.',
          },
        ],
        trigger: { event: 'order.updated', conditions: [{ field: 'status', op: 'eq', value: 'fulfilled' }] },
      },
    },
    response: {
      id: ID.reviewWorkflow,
      name: 'Ask for a review a week after delivery',
      steps: [
        { type: 'wait', seconds: 604800 },
        {
          type: 'send_message',
          content: 'Hi {{contact.name}}, how is the coffee? A short review helps our small roastery a lot.',
        },
      ],
      enabled: true,
      trigger: { event: 'order.updated', conditions: [{ field: 'status', op: 'eq', value: 'fulfilled' }] },
      created_at: NOW,
      updated_at: NOW,
    } satisfies Workflow,
  },
  'workflows.retrieve': { request: { params: { id: ID.thankYouWorkflow } }, response: thankYouWorkflow },
  'workflows.update': {
    request: { params: { id: ID.thankYouWorkflow }, body: { enabled: false } },
    response: { ...thankYouWorkflow, enabled: false, updated_at: NOW } satisfies Workflow,
  },
  'workflows.delete': { request: { params: { id: ID.thankYouWorkflow } } },
  'workflows.trigger': {
    request: { params: { id: ID.thankYouWorkflow }, body: { contact_id: ID.marta, data: { order_number: '1042' } } },
    response: thankYouRun,
  },
  'workflows.listRuns': {
    request: { params: { id: ID.thankYouWorkflow }, query: { status: 'queued', limit: 20 } },
    response: page([thankYouRun]),
  },
  'workflows.retrieveRun': {
    request: { params: { id: ID.thankYouWorkflow, run_id: ID.thankYouRun } },
    response: thankYouRun,
  },
  'workflows.cancelRun': {
    request: { params: { id: ID.thankYouWorkflow, run_id: ID.thankYouRun } },
    response: {
      ...thankYouRun,
      status: 'cancelled',
      steps: thankYouRun.steps.map((step) => ({ ...step, status: 'skipped' as const })),
      finished_at: NOW,
    } satisfies WorkflowRun,
  },
  'events.list': { request: { query: { type: 'order.placed', limit: 20 } }, response: page([orderPlaced]) },
  // A stream's answer is its events, one by one: the example is the first.
  'events.stream': { request: { query: { type: 'order.placed' } }, response: orderPlaced },
  'webhookEndpoints.list': { request: { query: { limit: 20 } }, response: page([fulfilmentEndpoint]) },
  'webhookEndpoints.create': {
    request: {
      body: {
        url: 'https://crm.tostado.example/hooks/convo',
        events: ['contact.created', 'contact.updated'],
        description: 'CRM: keep customer records in step',
      },
    },
    response: {
      id: ID.crmEndpoint,
      url: 'https://crm.tostado.example/hooks/convo',
      events: ['contact.created', 'contact.updated'],
      description: 'CRM: keep customer records in step',
      status: 'enabled',
      created_at: NOW,
      updated_at: NOW,
    } satisfies WebhookEndpoint,
  },
  'webhookEndpoints.retrieve': { request: { params: { id: ID.fulfilmentEndpoint } }, response: fulfilmentEndpoint },
  'webhookEndpoints.update': {
    request: {
      params: { id: ID.fulfilmentEndpoint },
      body: { events: ['order.placed', 'order.updated', 'conversation.resolved'] },
    },
    response: {
      ...fulfilmentEndpoint,
      events: ['order.placed', 'order.updated', 'conversation.resolved'],
      updated_at: NOW,
    } satisfies WebhookEndpoint,
  },
  'webhookEndpoints.delete': { request: { params: { id: ID.fulfilmentEndpoint } } },
  'webhookEndpoints.listDeliveries': {
    request: { params: { id: ID.fulfilmentEndpoint }, query: { status: 'failed', limit: 20 } },
    response: page([orderPlacedDelivery]),
  },
  'webhookEndpoints.retryDelivery': {
    request: { params: { id: ID.fulfilmentEndpoint, delivery_id: ID.orderPlacedDelivery } },
    response: { ...orderPlacedDelivery, status: 'pending', next_attempt_at: NOW } satisfies WebhookDelivery,
  },
  'webhookEndpoints.test': {
    request: { params: { id: ID.fulfilmentEndpoint } },
    response: {
      id: ID.pingDelivery,
      event_id: ID.ping,
      event_type: 'ping',
      endpoint_id: ID.fulfilmentEndpoint,
      status: 'succeeded',
      attempts: [{ at: NOW, status_code: 200, duration_ms: 84, error: null }],
      next_attempt_at: null,
      created_at: NOW,
    } satisfies WebhookDelivery,
  },
  'webhookEndpoints.replay': {
    request: {
      params: { id: ID.fulfilmentEndpoint },
      body: { since: '2026-11-21T00:00:00Z', until: '2026-11-22T00:00:00Z', status: 'failed' },
    },
    response: {
      endpoint_id: ID.fulfilmentEndpoint,
      since: '2026-11-21T00:00:00.000Z',
      until: '2026-11-22T00:00:00.000Z',
      status: 'failed',
      replayed: 1,
    },
  },
  'channels.list': { request: { query: { platform: 'whatsapp', limit: 20 } }, response: page([whatsappChannel]) },
  'channels.create': {
    request: {
      body: {
        platform: 'instagram',
        name: 'Tostado Instagram',
        external_id: '17841405822304914',
        access_token: 'EAAGm0PX4ZCpsBAK7ZBd2xQ9cZCfW1TnE0ZA4ZBy6ZCZAuhVwQ3XbZB',
        app_secret: '9f8e7d6c5b4a39281706f5e4d3c2b1a0',
      },
    },
    response: {
      id: ID.instagramChannel,
      platform: 'instagram',
      name: 'Tostado Instagram',
      external_id: '17841405822304914',
      status: 'active',
      business_account_id: null,
      webhook_url: `${STORY_ORIGIN}/hooks/meta/${ID.instagramChannel}`,
      verify_token: 'grind-H7j2Kp9Xq4Lm8Vt3',
      last_error: null,
      created_at: NOW,
      updated_at: NOW,
    } satisfies Channel,
  },
  'channels.retrieve': { request: { params: { id: ID.whatsappChannel } }, response: whatsappChannel },
  'channels.update': {
    request: { params: { id: ID.whatsappChannel }, body: { name: 'Tostado customer care' } },
    response: { ...whatsappChannel, name: 'Tostado customer care', updated_at: NOW } satisfies Channel,
  },
  'channels.listTemplates': {
    request: { params: { id: ID.whatsappChannel }, query: { status: 'APPROVED', limit: 20 } },
    response: page(STORY_TEMPLATES),
  },
  'channels.delete': { request: { params: { id: ID.whatsappChannel } } },
  'sandbox.inbound': {
    request: {
      body: {
        platform: 'whatsapp',
        from: { phone: '+4915123456789', name: 'Jonas Becker' },
        content: 'Hallo! Do you ship whole beans to Berlin?',
      },
    },
    response: {
      id: ID.jonasQuestion,
      conversation_id: ID.jonasConversation,
      direction: 'inbound',
      type: 'text',
      content: 'Hallo! Do you ship whole beans to Berlin?',
      status: 'delivered',
      platform_message_id: null,
      error: null,
      media: null,
      created_at: NOW,
      updated_at: NOW,
    } satisfies Message,
  },
};

/** What each error status answers, as the server words it for a common case. */
export const errorExamples: Record<400 | 401 | 403 | 404 | 429 | 500, ErrorBody> = {
  400: {
    error: {
      code: 'bad_request',
      message: 'phone: Must be an E.164 phone number: + then 7 to 15 digits, the first not 0',
      details: { field: 'phone', constraint: 'format' },
    },
  },
  401: { error: { code: 'unauthorized', message: 'Invalid API key' } },
  403: { error: { code: 'forbidden', message: 'This read-only key cannot write' } },
  404: { error: { code: 'not_found', message: `No such contact: ${ID.kenji}` } },
  429: { error: { code: 'rate_limited', message: 'Rate limit of 300 requests per minute exceeded; retry in 42 s' } },
  500: {
    error: {
      code: 'server_error',
      message: 'Internal error; quote request id 01M84A2C6QY3B5N7P9R1T3V5X7 when reporting it',
    },
  },
};
