import { useId } from 'react';
import { useToast } from './toasts';

/** A value to paste elsewhere: read-only, selected on focus, with a Copy button. */
export function CopyField({ label, value, hint }: { label: string; value: string; hint?: string }) {
  const id = useId();
  const toast = useToast();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      toast('Copied');
    } catch {
      toast('Could not copy: select the text and copy it yourself');
    }
  };
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <div className="copy-field">
        <input
          id={id}
          value={value}
          readOnly
          spellCheck={false}
          onFocus={(event) => event.currentTarget.select()}
          className="mono"
        />
        <button type="button" className="button" onClick={() => void copy()} aria-label={`Copy ${label.toLowerCase()}`}>
          Copy
        </button>
      </div>
      {hint ? <p className="field-hint">{hint}</p> : null}
    </div>
  );
}
