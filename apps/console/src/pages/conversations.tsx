import { type Conversation, ConversationStatus, type MessageMedia, Platform } from '@convo/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { Link } from 'wouter';
import { ListSection } from '../components/list-section';
import { useToast } from '../components/toasts';
import { consoleErrorOf } from '../errors';
import { messageTypeOf, uploadFile } from '../files';
import { formatDateTime } from '../format';
import { useSignedIn } from '../layout/console-layout';
import { canManage } from '../session';
import { useTRPC } from '../trpc';
import { PLATFORMS } from './channels';
import { DataTable } from '../components/data-table';

const PAGE_SIZE = 20;

type Status = ConversationStatus;

const STATUS_LABELS: Record<Status, string> = { active: 'Active', resolved: 'Resolved', archived: 'Archived' };

/** Where Convo's copy of a message's media stands. */
const MEDIA_STATUS: Record<MessageMedia['status'], string> = {
  pending: 'downloading',
  stored: 'kept',
  failed: 'could not be kept',
  too_large: 'too large to keep (over 100 MiB)',
};

/** `/conversations`: the account's conversations with the API's filters (status, platform, search), newest first. */
export function ConversationsPage() {
  const trpc = useTRPC();
  const [status, setStatus] = useState<Status | ''>('active');
  const [platform, setPlatform] = useState<Platform | ''>('');
  const [search, setSearch] = useState('');
  const [offset, setOffset] = useState(0);
  const query = {
    limit: PAGE_SIZE,
    offset,
    ...(status ? { status } : {}),
    ...(platform ? { platform } : {}),
    ...(search.trim() ? { search: search.trim() } : {}),
  };
  const conversations = useQuery(trpc.conversations.list.queryOptions({ query }));
  const filtered =
    <T,>(set: (value: T) => void) =>
    (value: T) => {
      set(value);
      setOffset(0);
    };
  return (
    <>
      <h1>Conversations</h1>
      <form className="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Status
          <select value={status} onChange={(event) => filtered(setStatus)(event.currentTarget.value as Status | '')}>
            <option value="">Any</option>
            {ConversationStatus.options.map((value) => (
              <option key={value} value={value}>
                {STATUS_LABELS[value]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Platform
          <select
            value={platform}
            onChange={(event) => filtered(setPlatform)(event.currentTarget.value as Platform | '')}
          >
            <option value="">Any</option>
            {Platform.options.map((value) => (
              <option key={value} value={value}>
                {PLATFORMS[value].label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Search
          <input
            type="search"
            value={search}
            placeholder="Name, phone or e-mail"
            onChange={(event) => filtered(setSearch)(event.currentTarget.value)}
          />
        </label>
      </form>
      <ListSection
        query={conversations}
        noun="conversations"
        empty="No conversations match."
        pager={{ label: 'Conversation pages', offset, size: PAGE_SIZE, onOffset: setOffset }}
      >
        {(records) => (
          <>
            <ConversationTable conversations={records} />
          </>
        )}
      </ListSection>
    </>
  );
}

/** A message's kept media: an image shown, anything else a link to download it. */
function MediaFile({ fileId, mimeType, type }: { fileId: string; mimeType: string; type: string }) {
  const href = `/console/files/${encodeURIComponent(fileId)}/content`;
  if (mimeType.startsWith('image/')) return <img className="message-media" src={href} alt={`The ${type} sent`} />;
  return (
    <p>
      <a href={href} download>
        Download the {type}
      </a>
    </p>
  );
}

/** Conversations as a table (cards on a phone): each links to its page. */
export function ConversationTable({ conversations }: { conversations: Conversation[] }) {
  return (
    <DataTable
      caption="Conversations"
      rows={conversations}
      rowKey={(conversation) => conversation.id}
      columns={[
        {
          label: 'Contact',
          cell: (conversation) => (
            <Link href={`/conversations/${conversation.id}`}>
              {conversation.contact.name ?? conversation.contact.phone ?? conversation.contact.id}
            </Link>
          ),
        },
        { label: 'Platform', cell: (conversation) => PLATFORMS[conversation.platform].label },
        { label: 'Status', cell: (conversation) => STATUS_LABELS[conversation.status] },
        {
          label: 'Last message',
          className: 'truncate',
          cell: (conversation) => conversation.last_message?.content ?? '—',
        },
        {
          label: 'Activity',
          cell: (conversation) => formatDateTime(conversation.last_message?.timestamp ?? conversation.created_at),
        },
      ]}
    />
  );
}

/** `/conversations/:id`: the messages with their delivery status and media, a reply box, resolve and archive. */
export function ConversationPage({ id }: { id: string }) {
  const session = useSignedIn();
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const toast = useToast();
  const manager = canManage(session);
  const [offset, setOffset] = useState(0);
  const [reply, setReply] = useState('');
  const [attachment, setAttachment] = useState<File | null>(null);
  const attachmentInput = useRef<HTMLInputElement>(null);
  const conversation = useQuery(trpc.conversations.retrieve.queryOptions({ params: { id } }));
  // Read again while open: statuses move (sent, delivered, read) and contacts write back.
  const messages = useQuery({
    ...trpc.conversations.listMessages.queryOptions({ params: { id }, query: { limit: PAGE_SIZE, offset } }),
    refetchInterval: 5_000,
  });
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries(trpc.conversations.listMessages.queryFilter()),
      queryClient.invalidateQueries(trpc.conversations.retrieve.queryFilter()),
    ]);
  const send = useMutation(
    trpc.messages.send.mutationOptions({
      onSuccess: async () => {
        setReply('');
        setAttachment(null);
        if (attachmentInput.current) attachmentInput.current.value = '';
        await refresh();
      },
      onError: (error) => toast(consoleErrorOf(error).message),
    }),
  );
  // A reply with a file: the file is uploaded first, then sent by its id with the text as its caption.
  const attach = useMutation({
    mutationFn: uploadFile,
    onSuccess: (file) => {
      const type = messageTypeOf(file.mime_type);
      const caption = reply.trim() && type !== 'audio' ? { content: reply } : {};
      send.mutate({ body: { conversation_id: id, type, media: { file_id: file.id }, ...caption } });
    },
    onError: (error) => toast(consoleErrorOf(error).message),
  });
  const sending = send.isPending || attach.isPending;
  const update = useMutation(
    trpc.conversations.update.mutationOptions({
      onSuccess: async (next) => {
        toast(`Conversation ${STATUS_LABELS[next.status].toLowerCase()}`);
        await refresh();
      },
      onError: (error) => toast(consoleErrorOf(error).message),
    }),
  );
  const current = conversation.data;
  return (
    <>
      <p className="breadcrumb">
        <Link href="/conversations">← Conversations</Link>
      </p>
      <div className="page-header">
        <h1>{current ? (current.contact.name ?? current.contact.phone ?? 'Conversation') : 'Conversation'}</h1>
        {manager && current && current.status !== 'archived' ? (
          <div className="header-actions">
            {current.status === 'active' ? (
              <button
                type="button"
                className="button"
                disabled={update.isPending}
                onClick={() => update.mutate({ params: { id }, body: { status: 'resolved' } })}
              >
                Resolve
              </button>
            ) : null}
            <button
              type="button"
              className="button"
              disabled={update.isPending}
              onClick={() => update.mutate({ params: { id }, body: { status: 'archived' } })}
            >
              Archive
            </button>
          </div>
        ) : null}
      </div>
      {conversation.isError ? (
        <p role="alert">Could not load the conversation: {consoleErrorOf(conversation.error).message}</p>
      ) : current ? (
        <dl className="facts">
          <dt>Platform</dt>
          <dd>{PLATFORMS[current.platform].label}</dd>
          <dt>Status</dt>
          <dd>{STATUS_LABELS[current.status]}</dd>
          <dt>Contact</dt>
          <dd>
            <Link href={`/contacts/${current.contact.id}`}>{current.contact.phone ?? current.contact.id}</Link>
          </dd>
        </dl>
      ) : (
        <p role="status">Loading…</p>
      )}
      <h2>Messages</h2>
      <ListSection
        query={messages}
        noun="messages"
        empty="No messages yet."
        pager={{ label: 'Message pages', offset, size: PAGE_SIZE, onOffset: setOffset }}
      >
        {(records) => (
          <>
            <ol className="messages">
              {records.map((message) => (
                <li key={message.id} className={`message message-${message.direction}`}>
                  <p className="message-content">{message.content || (message.media ? `(${message.type})` : '')}</p>
                  {message.media?.status === 'stored' && message.media.file_id ? (
                    <MediaFile fileId={message.media.file_id} mimeType={message.media.mime_type} type={message.type} />
                  ) : null}
                  {message.media ? (
                    <p className="muted">
                      {message.type}: {message.media.filename ?? message.media.mime_type} ·{' '}
                      {MEDIA_STATUS[message.media.status]}
                      {message.media.error ? `: ${message.media.error.message}` : ''}
                    </p>
                  ) : null}
                  <p className="message-meta">
                    {formatDateTime(message.created_at)} ·{' '}
                    {message.direction === 'inbound' ? 'received' : message.status}
                    {message.error ? ` · ${message.error.message}` : ''}
                  </p>
                </li>
              ))}
            </ol>
          </>
        )}
      </ListSection>
      {manager && current && current.status !== 'archived' ? (
        <form
          className="reply"
          onSubmit={(event) => {
            event.preventDefault();
            if (attachment) attach.mutate(attachment);
            else if (reply.trim()) send.mutate({ body: { conversation_id: id, content: reply } });
          }}
        >
          <label htmlFor="reply">Reply</label>
          <textarea id="reply" rows={3} value={reply} onChange={(event) => setReply(event.currentTarget.value)} />
          <label htmlFor="attachment">Attach a file (sent with the text as its caption)</label>
          <input
            id="attachment"
            ref={attachmentInput}
            type="file"
            onChange={(event) => setAttachment(event.currentTarget.files?.[0] ?? null)}
          />
          <button type="submit" className="button button-primary" disabled={sending || (!reply.trim() && !attachment)}>
            {attach.isPending ? 'Uploading…' : 'Send'}
          </button>
        </form>
      ) : null}
    </>
  );
}
