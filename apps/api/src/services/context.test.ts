import { describe, expect, it } from 'vitest';
import { page } from './context.js';

describe('page', () => {
  it('keeps a count that agrees with its page', () => {
    expect(page(['a', 'b'], 5, 2, 0)).toEqual({ data: ['a', 'b'], total: 5, limit: 2, offset: 0, has_more: true });
    expect(page(['e'], 5, 2, 4)).toMatchObject({ total: 5, has_more: false });
    expect(page([], 5, 2, 6)).toMatchObject({ total: 5, has_more: false });
    expect(page([], 0, 20, 0)).toMatchObject({ total: 0, has_more: false });
  });

  // The count and the page are read by two statements; a commit between them must not make the
  // envelope contradict itself (the webhook deliveries test once saw total 2 with no rows).
  it('takes the total the page shows when a commit fell between the page and its count', () => {
    expect(page([], 2, 20, 0)).toMatchObject({ total: 0, has_more: false });
    expect(page(['a'], 3, 20, 0)).toMatchObject({ total: 1, has_more: false });
    expect(page(['a', 'b'], 1, 2, 0)).toMatchObject({ total: 2, has_more: false });
    expect(page(['a', 'b'], 3, 2, 4)).toMatchObject({ total: 6, has_more: false });
    expect(page([], 50, 20, 40)).toMatchObject({ total: 40, has_more: false });
  });
});
