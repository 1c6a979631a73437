import packageJson from '../package.json' with { type: 'json' };

/** This package's version, shared by the SDK, CLI and Python client (one changesets group) and the OpenAPI `info`. */
export const CONTRACT_VERSION: string = packageJson.version;
