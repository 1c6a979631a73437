import type { ReactNode } from 'react';
import { CopyField } from './copy-field';

/** A secret a dialog shows this once: why it matters, the value to copy, and Done. */
export function ShownOnce({
  warning,
  label,
  value,
  onDone,
}: {
  warning: ReactNode;
  label: string;
  value: string;
  onDone: () => void;
}) {
  return (
    <div>
      <p className="warning" role="alert">
        {warning}
      </p>
      <CopyField label={label} value={value} />
      <div className="dialog-actions">
        <button type="button" className="button button-primary" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
