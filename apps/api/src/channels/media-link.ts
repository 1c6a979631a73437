import http from 'node:http';
import https from 'node:https';
import { publicOnlyLookup, requestRefusal } from '../webhook-addresses.js';
import { type GraphError, networkFailure } from './graph-api.js';
import { MEDIA_DOWNLOAD_TIMEOUT_MS, type MediaOutcome } from './graph-media.js';

// Fetches the link a media message names, held to the webhooks' rules: https to a public address
// (unless private addresses are allowed), checked when connecting, and no redirect followed.

/** A link whose server says nothing for this long is a failed try. */
const IDLE_MS = 30_000;

/** Opens a link's bytes: never throws; the network and 5xx are retryable, the rest not. */
export function openLink(link: string, options: { allowPrivate: boolean }): Promise<MediaOutcome> {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return Promise.resolve(networkFailure('permanent', 'invalid_url', 'The media URL is not a valid URL'));
  }
  const refusal = requestRefusal(url, options.allowPrivate);
  if (refusal)
    return Promise.resolve(networkFailure('permanent', 'invalid_url', `The media URL is refused: ${refusal}`));

  return new Promise((resolve) => {
    const fail = (error: GraphError) => {
      resolve(error);
      req.destroy();
    };
    const req = (url.protocol === 'https:' ? https : http).get(url, {
      timeout: IDLE_MS,
      ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup }),
    });
    const deadline = setTimeout(
      () => req.destroy(new Error(`the download took over ${MEDIA_DOWNLOAD_TIMEOUT_MS} ms`)),
      MEDIA_DOWNLOAD_TIMEOUT_MS,
    );
    req.on('close', () => clearTimeout(deadline));
    req.on('timeout', () => req.destroy(new Error(`no data for ${IDLE_MS} ms`)));
    req.on('error', (error: NodeJS.ErrnoException) =>
      fail(
        networkFailure(
          error.code === 'EPRIVATEADDRESS' ? 'permanent' : 'retryable',
          error.code === 'EPRIVATEADDRESS' ? 'invalid_url' : 'network_error',
          `Fetching the media URL failed: ${error.message}`,
        ),
      ),
    );
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        const retryable = status >= 500 || status === 429 || status === 408;
        const why = status >= 300 && status < 400 ? ' (redirects are not followed: give the final address)' : '';
        fail({
          ...networkFailure(
            retryable ? 'retryable' : 'permanent',
            `http_${status}`,
            `The media URL answered HTTP ${status}${why}`,
          ),
          httpStatus: status,
        });
        return;
      }
      const length = Number(res.headers['content-length']);
      resolve({
        ok: true,
        bytes: res,
        size: res.headers['content-length'] !== undefined && Number.isFinite(length) ? length : null,
        mimeType: res.headers['content-type'] ?? null,
      });
    });
  });
}
