/**
 * The one place that reads process.env. Everything else receives configuration as arguments.
 */
export interface Env {
  nodeEnv: 'development' | 'test' | 'production';
  port: number;
  host: string;
  databaseUrl: string | undefined;
  logLevel: string;
}

export function readEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const nodeEnv = source.NODE_ENV === 'production' || source.NODE_ENV === 'test' ? source.NODE_ENV : 'development';
  const port = Number(source.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got "${source.PORT}"`);
  return {
    nodeEnv,
    port,
    host: source.HOST || '127.0.0.1',
    databaseUrl: source.DATABASE_URL || undefined,
    logLevel: source.LOG_LEVEL || (nodeEnv === 'test' ? 'silent' : 'info'),
  };
}
