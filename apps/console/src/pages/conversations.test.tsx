import { screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sessionAs } from '../testing/fake-server';
import { renderConsole } from '../testing/render';

const at = '2026-11-20T10:00:00.000Z';
const conversation = {
  id: 'conv_1',
  contact: { id: 'ct_1', name: 'Ana Souza', phone: '+5511999990000' },
  platform: 'whatsapp',
  channel_id: 'ch_1',
  status: 'active',
  message_count: 3,
  last_message: { content: '', timestamp: at },
  created_at: at,
  updated_at: at,
};
const media = (over: object) => ({ id: 'wamid-media', mime_type: 'image/jpeg', file_id: null, error: null, ...over });
const message = (id: string, type: string, over: object) => ({
  id,
  conversation_id: 'conv_1',
  direction: 'inbound',
  type,
  content: '',
  status: 'delivered',
  platform_message_id: `p_${id}`,
  error: null,
  media: null,
  created_at: at,
  updated_at: at,
  ...over,
});

describe('a conversation page', () => {
  it("shows a kept image, links a kept document, and tells where other media's download stands", async () => {
    const messages = [
      message('msg_1', 'image', { media: media({ status: 'stored', file_id: 'file_img' }) }),
      message('msg_2', 'document', {
        media: media({ status: 'stored', file_id: 'file_pdf', mime_type: 'application/pdf', filename: 'invoice.pdf' }),
      }),
      message('msg_3', 'video', {
        media: media({ status: 'failed', mime_type: 'video/mp4', error: { code: '100', message: 'Media expired' } }),
      }),
    ];
    renderConsole('/conversations/conv_1', {
      'session.get': () => sessionAs('member'),
      'conversations.retrieve': () => conversation,
      'conversations.listMessages': () => ({ data: messages, total: 3, limit: 20, offset: 0, has_more: false }),
    });

    const image = await screen.findByRole('img', { name: 'The image sent' });
    expect(image.getAttribute('src')).toBe('/console/files/file_img/content');
    expect(screen.getByRole('link', { name: 'Download the document' }).getAttribute('href')).toBe(
      '/console/files/file_pdf/content',
    );
    expect(screen.getByText(/video\/mp4 · could not be kept: Media expired/)).toBeTruthy();
    expect(screen.queryByRole('link', { name: 'Download the video' })).toBeNull();
  });

  afterEach(() => vi.unstubAllGlobals());

  it('uploads an attached file and sends it by id, with the reply as its caption', async () => {
    const uploads: FormData[] = [];
    vi.stubGlobal(
      'fetch',
      vi.fn(async (url: string, init: RequestInit) => {
        expect(url).toBe('/console/files');
        expect(init.headers).toMatchObject({ 'x-convo-csrf': '1' });
        uploads.push(init.body as FormData);
        const file = {
          id: 'file_new',
          filename: 'mug.png',
          mime_type: 'image/png',
          size: 4,
          sha256: 'x',
          created_at: at,
        };
        return new Response(JSON.stringify(file), { status: 201, headers: { 'content-type': 'application/json' } });
      }),
    );
    const { server } = renderConsole('/conversations/conv_1', {
      'session.get': () => sessionAs('owner'),
      'conversations.retrieve': () => conversation,
      'conversations.listMessages': () => ({ data: [], total: 0, limit: 20, offset: 0, has_more: false }),
      'messages.send': () => message('msg_9', 'image', { direction: 'outbound', status: 'queued' }),
    });
    const user = userEvent.setup();
    await user.type(await screen.findByLabelText('Reply'), 'Is this the one?');
    await user.upload(screen.getByLabelText(/Attach a file/), new File(['\x89PNG'], 'mug.png', { type: 'image/png' }));
    await user.click(screen.getByRole('button', { name: 'Send' }));

    await vi.waitFor(() => expect(server.callsOf('messages.send')).toHaveLength(1));
    expect(uploads[0]?.get('file')).toMatchObject({ name: 'mug.png' });
    expect(server.callsOf('messages.send')[0]).toEqual({
      body: { conversation_id: 'conv_1', type: 'image', media: { file_id: 'file_new' }, content: 'Is this the one?' },
    });
  });
});
