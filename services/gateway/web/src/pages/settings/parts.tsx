import { useState } from 'react';
import { when } from '../../ui';

export function Saved({ at }: { at: string | null }) {
  return at ? <small className="muted">Saved {when(at)}</small> : null;
}

/** A secret shown this once, with a button that copies it. */
export function ShownOnce({ label, secret, children }: { label: string; secret: string; children?: React.ReactNode }) {
  const [copied, setCopied] = useState<string | null>(null);
  return (
    <div className="notice" role="status" aria-label={label}>
      <p>
        <strong>{label}</strong>: shown this once. Copy it now; it is never shown again.
      </p>
      <div className="row">
        <code className="secret">{secret}</code>
        <button
          type="button"
          onClick={() =>
            navigator.clipboard.writeText(secret).then(
              () => setCopied('Copied.'),
              () => setCopied('Copy failed: select the secret and copy it by hand.'),
            )
          }
        >
          Copy
        </button>
        {copied ? <span className="muted">{copied}</span> : null}
      </div>
      {children}
    </div>
  );
}
