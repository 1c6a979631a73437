import { type ReactNode, createContext, useCallback, useContext, useEffect, useRef, useState } from 'react';

interface Toast {
  id: number;
  message: string;
}

const ToastContext = createContext<(message: string) => void>(() => {});

/** Short confirmations ("Copied", "Key revoked"), announced politely by a live region that is always in the page. */
export function ToastProvider({ children, timeoutMs = 4000 }: { children: ReactNode; timeoutMs?: number }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const nextId = useRef(1);
  const timers = useRef(new Set<ReturnType<typeof setTimeout>>());
  useEffect(() => {
    const pending = timers.current;
    return () => {
      for (const timer of pending) clearTimeout(timer);
    };
  }, []);
  const show = useCallback(
    (message: string) => {
      const id = nextId.current++;
      setToasts((current) => [...current, { id, message }]);
      const timer = setTimeout(() => {
        timers.current.delete(timer);
        setToasts((current) => current.filter((toast) => toast.id !== id));
      }, timeoutMs);
      timers.current.add(timer);
    },
    [timeoutMs],
  );
  const dismiss = (id: number) => setToasts((current) => current.filter((toast) => toast.id !== id));
  return (
    <ToastContext.Provider value={show}>
      {children}
      <section className="toasts" aria-label="Notifications">
        {/* The live region wraps the list: a role on the <ul> itself would unmake the list its items need (axe: listitem). */}
        <div role="status" aria-live="polite">
          <ul>
            {toasts.map((toast) => (
              <li key={toast.id} className="toast">
                <span>{toast.message}</span>
                <button
                  type="button"
                  className="button-link"
                  onClick={() => dismiss(toast.id)}
                  aria-label={`Dismiss: ${toast.message}`}
                >
                  ×
                </button>
              </li>
            ))}
          </ul>
        </div>
      </section>
    </ToastContext.Provider>
  );
}

export function useToast(): (message: string) => void {
  return useContext(ToastContext);
}
