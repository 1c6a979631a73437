import packageJson from '../package.json' with { type: 'json' };

/**
 * The contract's version: the version of this package, which the SDK, the CLI and the Python
 * client share (one changesets group), and the OpenAPI document's `info.version`.
 */
export const CONTRACT_VERSION: string = packageJson.version;
