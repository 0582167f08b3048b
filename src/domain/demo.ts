import fs from 'node:fs';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../db/entities';
import { createMerchant } from './merchants';

export interface DemoCredentials {
  merchantId: string;
  publicKey: string;
  secretKey: string;
}

/**
 * The demo merchant of `npm start`, created on first start. Its test-key secret is kept in
 * $DATA_DIR/demo-merchant.json (mode 0600) so every start can print a working curl; this is
 * the only secret ever written to disk, and only for the local demo stack.
 */
export async function ensureDemoMerchant(em: EntityManager, dataDir: string): Promise<DemoCredentials> {
  const file = path.join(dataDir, 'demo-merchant.json');
  if (fs.existsSync(file)) {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as DemoCredentials;
    const key = await em.findOne(ApiKey, { publicKey: saved.publicKey, isActive: true });
    if (key) return saved;
  }
  const { merchant, apiKey, secretKey } = await createMerchant(em, {
    name: 'Demo Merchant',
    email: 'demo@example.com',
  });
  const creds = { merchantId: merchant.id, publicKey: apiKey.publicKey, secretKey };
  fs.writeFileSync(file, JSON.stringify(creds, null, 2), { mode: 0o600 });
  return creds;
}
