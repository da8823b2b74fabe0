// Writes a new RS256 signing key: its private JWK (for provider.mjs) and the same key
// as PKCS#8 DER in base64 (for tests that sign the tokens a provider will not issue).
//
//   node keys.mjs OUT.json KID
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';

const [out, kid] = process.argv.slice(2);
if (!out || !kid) {
  console.error('usage: node keys.mjs OUT.json KID');
  process.exit(2);
}
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
const pkcs8 = privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');
writeFileSync(out, JSON.stringify({ jwk, pkcs8 }));
