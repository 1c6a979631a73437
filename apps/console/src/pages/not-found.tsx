import { Link } from 'wouter';

export function NotFoundPage() {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is nothing here. Go to the <Link href="/api-keys">API keys</Link>.
      </p>
    </>
  );
}
