import type { ReactNode } from 'react';
import { Dialog, Heading, Modal, ModalOverlay } from 'react-aria-components';

interface ModalDialogProps {
  title: string;
  isOpen: boolean;
  onOpenChange: (isOpen: boolean) => void;
  children: ReactNode;
  /** Whether Escape and a click outside close it (off while a shown-once secret is on screen). */
  isDismissable?: boolean;
  role?: 'dialog' | 'alertdialog';
}

/**
 * A modal dialog: focus moves into it and stays there, and returns to what opened it on close
 * (React Aria). It sets the page's overflow through element.style, which the CSP allows.
 */
export function ModalDialog({
  title,
  isOpen,
  onOpenChange,
  children,
  isDismissable = true,
  role = 'dialog',
}: ModalDialogProps) {
  return (
    <ModalOverlay
      className="modal-overlay"
      isOpen={isOpen}
      onOpenChange={onOpenChange}
      isDismissable={isDismissable}
      isKeyboardDismissDisabled={!isDismissable}
    >
      <Modal className="modal">
        <Dialog className="dialog" role={role}>
          <Heading slot="title" className="dialog-title">
            {title}
          </Heading>
          {children}
        </Dialog>
      </Modal>
    </ModalOverlay>
  );
}

interface ConfirmDialogProps {
  title: string;
  isOpen: boolean;
  onCancel: () => void;
  onConfirm: () => void;
  confirmLabel: string;
  children: ReactNode;
  isPending?: boolean;
  error?: string | undefined;
}

/** "Are you sure?" for a destructive action: Cancel (focused first) or the action. */
export function ConfirmDialog({
  title,
  isOpen,
  onCancel,
  onConfirm,
  confirmLabel,
  children,
  isPending = false,
  error,
}: ConfirmDialogProps) {
  return (
    <ModalDialog
      title={title}
      isOpen={isOpen}
      onOpenChange={(open) => (open ? undefined : onCancel())}
      role="alertdialog"
    >
      <div className="dialog-body">{children}</div>
      {error ? (
        <p className="form-error" role="alert">
          {error}
        </p>
      ) : null}
      <div className="dialog-actions">
        {/* biome-ignore lint/a11y/noAutofocus: the safe choice takes focus in a destructive confirmation */}
        <button type="button" className="button" onClick={onCancel} autoFocus>
          Cancel
        </button>
        <button type="button" className="button button-danger" onClick={onConfirm} disabled={isPending}>
          {confirmLabel}
        </button>
      </div>
    </ModalDialog>
  );
}
