import type { Message, SandboxInboundBody } from '../contract.js';
import type { RequestOptions } from '../request-sender.js';
import { Resource } from './resource.js';

export class Sandbox extends Resource {
  /** Simulates a message arriving from a contact (servers with the sandbox on only). */
  inbound(body: SandboxInboundBody, options?: RequestOptions): Promise<Message> {
    return this.request('sandbox.inbound', { body }, options);
  }
}
