import type { ReactNode } from 'react';

/** A column: its header, and on a phone the label shown beside each of its cells (styles.css, `data-label`). */
export interface Column<T> {
  label: string;
  cell: (row: T) => ReactNode;
  className?: string;
}

/**
 * A table of records that turns into one card a row on narrow screens. `actions` is the last column, headed for
 * screen readers only, its cells unlabelled; columns given as `false` are left out (a member's missing rights).
 */
export function DataTable<T>({
  caption,
  rows,
  rowKey,
  columns,
  actions,
}: {
  caption: string;
  rows: readonly T[];
  rowKey: (row: T) => string;
  columns: readonly (Column<T> | false)[];
  actions?: ((row: T) => ReactNode) | false;
}) {
  const shown = columns.filter((column): column is Column<T> => column !== false);
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {shown.map((column) => (
              <th key={column.label} scope="col">
                {column.label}
              </th>
            ))}
            {actions ? (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {shown.map((column) => (
                <td key={column.label} data-label={column.label} className={column.className}>
                  {column.cell(row)}
                </td>
              ))}
              {actions ? <td className="actions">{actions(row)}</td> : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
