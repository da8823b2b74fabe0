// An OpenID provider for Rill's tests: panva's oidc-provider (OpenID certified),
// unmodified, issuing client-credentials access tokens as JWTs (RFC 9068).
//
//   node provider.mjs PORT KEYS.json [KEYS.json ...]
//
// The issuer is http://127.0.0.1:PORT. The first key signs; every key is published in
// the JWKS. Clients (secret = id + "-secret"):
//   rill-client          client_secret_post, tokens live 300 s
//   rill-client-basic    client_secret_basic, tokens live 300 s
//   rill-short-lived     client_secret_post, tokens live 3 s
// Resources (the token's `aud`): `rill-api` by default; `other-api` when asked for
// with `resource=urn:other-api` (a token for another service). Every token carries
// `groups: ["engineers"]`. Prints `issuer <URL>` once it listens.
import { readFileSync } from 'node:fs';

import Provider from 'oidc-provider';

const [port, ...keyFiles] = process.argv.slice(2);
if (!port || keyFiles.length === 0) {
  console.error('usage: node provider.mjs PORT KEYS.json [KEYS.json ...]');
  process.exit(2);
}
const keys = keyFiles.map((file) => JSON.parse(readFileSync(file, 'utf8')).jwk);
const issuer = `http://127.0.0.1:${port}`;

const resources = {
  'urn:rill-api': 'rill-api',
  'urn:other-api': 'other-api',
};

const client = (id, method, extra = {}) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: method,
  ...extra,
});

const provider = new Provider(issuer, {
  clients: [
    client('rill-client', 'client_secret_post'),
    client('rill-client-basic', 'client_secret_basic'),
    client('rill-short-lived', 'client_secret_post'),
  ],
  jwks: { keys },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => 'urn:rill-api',
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => {
        const audience = resources[resource];
        if (!audience) {
          throw new Provider.errors.InvalidTarget();
        }
        return {
          audience,
          scope: 'api',
          accessTokenFormat: 'jwt',
          accessTokenTTL: 300,
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  extraTokenClaims: () => ({ groups: ['engineers'] }),
  ttl: {
    ClientCredentials: (_ctx, _token, tokenClient) =>
      tokenClient.clientId === 'rill-short-lived' ? 3 : 300,
  },
});

// Camunda's SDKs ask for an `audience`; this provider takes the resource instead and
// ignores the unknown parameter.
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`issuer ${issuer}`);
});
