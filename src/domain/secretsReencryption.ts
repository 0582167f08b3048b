import type { EntityManager } from '@mikro-orm/postgresql';
import {
  ciphertextKeyId,
  ProviderSecretError,
  type ProviderSecretContext,
  type ProviderSecrets,
} from '../providers/secrets';
import { PLAIN } from './signingSecrets';

/** Every column that holds a secret sealed under PROVIDER_SECRETS_KEY, with the context bound into it. */
const SEALED_COLUMNS = [
  {
    table: 'merchant_providers',
    key: ['merchant_id', 'environment'],
    columns: ['secret_key_ciphertext', 'webhook_secret_ciphertext'],
    context: (row: SealedRow, column: string): ProviderSecretContext => ({
      merchantId: row.merchant_id,
      environment: row.environment,
      field: column === 'secret_key_ciphertext' ? 'secret_key' : 'webhook_secret',
    }),
  },
  {
    table: 'merchant_signing_secrets',
    key: ['merchant_id', 'environment'],
    columns: ['secret', 'previous_secret'],
    context: (row: SealedRow): ProviderSecretContext => ({
      merchantId: row.merchant_id,
      environment: row.environment,
      field: 'signing_secret',
    }),
  },
  {
    table: 'webhook_endpoints',
    key: ['id'],
    columns: ['secret_ciphertext', 'previous_secret_ciphertext'],
    context: (row: SealedRow): ProviderSecretContext => ({
      merchantId: row.merchant_id,
      environment: row.environment,
      field: `webhook_endpoint:${row.id}`,
    }),
  },
] as const;

interface SealedRow {
  id?: string;
  merchant_id: string;
  environment: string;
  [column: string]: string | null | undefined;
}

export interface ColumnReencryption {
  /** Sealed again under the current key (or, with dryRun, would be). */
  resealed: number;
  /** Already under the current key. */
  current: number;
  /** Left as they are: sealed under a key neither current nor listed, by key id (never a secret). */
  unreadable: Record<string, number>;
}

const BATCH = 200;

/**
 * `npm run cli -- secrets:reencrypt` (decision 0080): every secret sealed under a previous key
 * is sealed again under PROVIDER_SECRETS_KEY, a batch of rows at a time. Safe while the API
 * serves: each row is written only if it still holds the ciphertext that was read (a rotation or
 * a new secret written meanwhile wins, and is already current). Idempotent: a second run finds
 * every row current. A row no listed key opens is counted by its key id and left alone.
 */
export async function reencryptSecrets(
  em: EntityManager,
  secrets: ProviderSecrets,
  opts: { dryRun?: boolean } = {},
): Promise<Record<string, ColumnReencryption>> {
  const connection = em.getConnection();
  const report: Record<string, ColumnReencryption> = {};
  for (const spec of SEALED_COLUMNS) {
    for (const column of spec.columns) {
      const counts: ColumnReencryption = { resealed: 0, current: 0, unreadable: {} };
      report[`${spec.table}.${column}`] = counts;
      const keyColumns = spec.key.join(', ');
      let after: string[] | null = null;
      for (;;) {
        const rows: SealedRow[] = await connection.execute(
          `select ${keyColumns}, merchant_id, environment, ${column} as sealed from ${spec.table}
            where ${column} is not null ${after ? `and (${keyColumns}) > (${spec.key.map(() => '?').join(', ')})` : ''}
            order by ${keyColumns} limit ?`,
          [...(after ?? []), BATCH],
        );
        for (const row of rows) {
          const stored = row.sealed as string;
          if (stored.startsWith(PLAIN)) continue;
          if (secrets.isCurrent(stored)) {
            counts.current++;
            continue;
          }
          let plaintext: string;
          try {
            plaintext = secrets.decrypt(stored, spec.context(row, column));
          } catch (err) {
            if (!(err instanceof ProviderSecretError)) throw err;
            const id = ciphertextKeyId(stored) ?? 'v1 (no key id)';
            counts.unreadable[id] = (counts.unreadable[id] ?? 0) + 1;
            continue;
          }
          if (!opts.dryRun) {
            const resealed = secrets.encrypt(plaintext, spec.context(row, column));
            await connection.execute(
              `update ${spec.table} set ${column} = ? where ${spec.key.map((k) => `${k} = ?`).join(' and ')} and ${column} = ?`,
              [resealed, ...spec.key.map((k) => row[k]), stored],
            );
          }
          counts.resealed++;
        }
        if (rows.length < BATCH) break;
        const last = rows[rows.length - 1]!;
        after = spec.key.map((k) => last[k] as string);
      }
    }
  }
  return report;
}
