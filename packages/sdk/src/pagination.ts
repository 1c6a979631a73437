import type { Page as PageShape } from './contract.js';

export type Page<T> = PageShape<T>;

/**
 * What a list method returns: await it for one page, or iterate it with `for await` for every
 * record from that page on, fetching further pages as needed.
 */
export class PagePromise<T> implements PromiseLike<Page<T>>, AsyncIterable<T> {
  private first: Promise<Page<T>> | undefined;

  constructor(private readonly fetchPage: (offset: number | undefined) => Promise<Page<T>>) {}

  private firstPage(): Promise<Page<T>> {
    this.first ??= this.fetchPage(undefined);
    return this.first;
  }

  // biome-ignore lint/suspicious/noThenProperty: a list is awaitable for its first page (`await convo.contacts.list()`), by design.
  then<R1 = Page<T>, R2 = never>(
    onfulfilled?: ((value: Page<T>) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.firstPage().then(onfulfilled, onrejected);
  }

  catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<Page<T> | R> {
    return this.firstPage().catch(onrejected);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let page = await this.firstPage();
    for (;;) {
      yield* page.data;
      if (!page.has_more || page.data.length === 0) return;
      page = await this.fetchPage(page.offset + page.data.length);
    }
  }

  /** Every record from this page on; with `limit`, at most that many (fetching no more pages than needed). */
  async toArray(options: { limit?: number } = {}): Promise<T[]> {
    const limit = options.limit ?? Number.POSITIVE_INFINITY;
    if (limit !== Number.POSITIVE_INFINITY && !(Number.isInteger(limit) && limit >= 0)) {
      throw new TypeError(`toArray: limit must be a whole number of records, 0 or more (got ${String(options.limit)})`);
    }
    const out: T[] = [];
    if (limit === 0) return out;
    for await (const item of this) {
      out.push(item);
      if (out.length >= limit) break;
    }
    return out;
  }
}
