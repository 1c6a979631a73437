/** Newer / Older over a list envelope (`total`, `has_more`), `size` records a page. */
export function Pager({
  label,
  offset,
  size,
  shown,
  total,
  hasMore,
  onOffset,
}: {
  label: string;
  offset: number;
  size: number;
  shown: number;
  total: number;
  hasMore: boolean;
  onOffset: (offset: number) => void;
}) {
  return (
    <nav className="pager" aria-label={label}>
      <button
        type="button"
        className="button button-small"
        disabled={offset === 0}
        onClick={() => onOffset(Math.max(0, offset - size))}
      >
        Newer
      </button>
      <span>
        {shown === 0 ? 0 : offset + 1}–{offset + shown} of {total}
      </span>
      <button type="button" className="button button-small" disabled={!hasMore} onClick={() => onOffset(offset + size)}>
        Older
      </button>
    </nav>
  );
}
