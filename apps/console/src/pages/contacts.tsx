import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'wouter';
import { ListSection } from '../components/list-section';
import { consoleErrorOf } from '../errors';
import { formatDateTime, formatMoney } from '../format';
import { useTRPC } from '../trpc';
import { ConversationTable } from './conversations';
import { DataTable } from '../components/data-table';

const PAGE_SIZE = 20;

/** `/contacts`: search and a tag, as the API filters them, newest first. */
export function ContactsPage() {
  const trpc = useTRPC();
  const [search, setSearch] = useState('');
  const [tag, setTag] = useState('');
  const [offset, setOffset] = useState(0);
  const query = {
    limit: PAGE_SIZE,
    offset,
    ...(search.trim() ? { search: search.trim() } : {}),
    ...(tag.trim() ? { tag: tag.trim() } : {}),
  };
  const contacts = useQuery(trpc.contacts.list.queryOptions({ query }));
  return (
    <>
      <h1>Contacts</h1>
      <form className="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Search
          <input
            type="search"
            value={search}
            placeholder="Name, phone or e-mail"
            onChange={(event) => {
              setSearch(event.currentTarget.value);
              setOffset(0);
            }}
          />
        </label>
        <label>
          Tag
          <input
            value={tag}
            onChange={(event) => {
              setTag(event.currentTarget.value);
              setOffset(0);
            }}
          />
        </label>
      </form>
      <ListSection
        query={contacts}
        noun="contacts"
        empty="No contacts match."
        pager={{ label: 'Contact pages', offset, size: PAGE_SIZE, onOffset: setOffset }}
      >
        {(records) => (
          <>
            <DataTable
              caption="Contacts"
              rows={records}
              rowKey={(contact) => contact.id}
              columns={[
                {
                  label: 'Name',
                  cell: (contact) => <Link href={`/contacts/${contact.id}`}>{contact.name ?? contact.id}</Link>,
                },
                { label: 'Phone', cell: (contact) => contact.phone ?? '—' },
                { label: 'E-mail', cell: (contact) => contact.email ?? '—' },
                { label: 'Tags', cell: (contact) => contact.tags.join(', ') || '—' },
                { label: 'Created', cell: (contact) => formatDateTime(contact.created_at) },
              ]}
            />
          </>
        )}
      </ListSection>
    </>
  );
}

/** `/contacts/:id`: the contact, its tags, attributes and platform identities, its conversations and its orders. */
export function ContactPage({ id }: { id: string }) {
  const trpc = useTRPC();
  const contact = useQuery(trpc.contacts.retrieve.queryOptions({ params: { id } }));
  const conversations = useQuery(trpc.conversations.list.queryOptions({ query: { contact_id: id, limit: 50 } }));
  const orders = useQuery(trpc.orders.list.queryOptions({ query: { contact_id: id, limit: 50 } }));
  const current = contact.data;
  return (
    <>
      <p className="breadcrumb">
        <Link href="/contacts">← Contacts</Link>
      </p>
      <h1>{current?.name ?? current?.phone ?? 'Contact'}</h1>
      {contact.isPending ? (
        <p role="status">Loading…</p>
      ) : contact.isError ? (
        <p role="alert">Could not load the contact: {consoleErrorOf(contact.error).message}</p>
      ) : (
        <dl className="facts">
          <dt>Phone</dt>
          <dd>{contact.data.phone ?? '—'}</dd>
          <dt>E-mail</dt>
          <dd>{contact.data.email ?? '—'}</dd>
          <dt>Tags</dt>
          <dd>{contact.data.tags.join(', ') || '—'}</dd>
          {Object.entries(contact.data.attributes).map(([name, value]) => (
            <div key={name} className="fact">
              <dt>{name}</dt>
              <dd>{String(value)}</dd>
            </div>
          ))}
          <dt>Channels</dt>
          <dd>{contact.data.identities.map((identity) => identity.platform).join(', ') || '—'}</dd>
          <dt>Created</dt>
          <dd>{formatDateTime(contact.data.created_at)}</dd>
        </dl>
      )}
      <h2>Conversations</h2>
      <ListSection query={conversations} noun="conversations" empty="No conversations.">
        {(records) => (
          <>
            <ConversationTable conversations={records} />
          </>
        )}
      </ListSection>
      <h2>Orders</h2>
      <ListSection query={orders} noun="orders" empty="No orders.">
        {(records) => (
          <>
            <DataTable
              caption="Orders"
              rows={records}
              rowKey={(order) => order.id}
              columns={[
                { label: 'Number', cell: (order) => order.number },
                { label: 'Status', cell: (order) => order.status },
                { label: 'Total', cell: (order) => formatMoney(order.total_amount, order.currency) },
                { label: 'Placed', cell: (order) => formatDateTime(order.placed_at) },
              ]}
            />
          </>
        )}
      </ListSection>
    </>
  );
}
