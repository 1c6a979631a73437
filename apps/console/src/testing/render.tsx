import { render } from '@testing-library/react';
import { memoryLocation } from 'wouter/memory-location';
import { App } from '../app';
import { fakeServer } from './fake-server';

/** The whole console at `path`, over a fake server. */
export function renderConsole(path: string, handlers: Parameters<typeof fakeServer>[0]) {
  const server = fakeServer(handlers);
  const location = memoryLocation({ path, record: true });
  const view = render(<App links={[server.link]} routerHook={location.hook} />);
  return { ...view, server, location };
}
