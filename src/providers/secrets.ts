import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Provider secrets (a Stripe secret key, a webhook signing secret) encrypted at rest with
 * AES-256-GCM under PROVIDER_SECRETS_KEY. Stored text: `v1:<iv>:<tag>:<ciphertext>`, each part
 * base64. A fresh 12-byte IV per encryption; the 16-byte tag is checked on decryption. The
 * additional authenticated data is `merchantId:environment:field`, so a ciphertext copied to
 * another merchant, environment or field does not decrypt.
 *
 * Key rotation (decision 0080): new ciphertexts are `v2:<key id>:<iv>:<tag>:<ciphertext>`, the key
 * id being the first 8 hex digits of SHA-256 of the key (never the key). A `v2` ciphertext is
 * opened with the key of its id: PROVIDER_SECRETS_KEY or one of PROVIDER_SECRETS_PREVIOUS_KEYS.
 * A `v1` ciphertext (no id) was sealed with the then-current key: the current key is tried, then
 * the previous ones. `npm run cli -- secrets:reencrypt` re-seals every row under the current key.
 */
const VERSION = 'v1';
const VERSION_WITH_ID = 'v2';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** `signing_secret`: a merchant's callback signing secret (src/domain/signingSecrets.ts). */
export type ProviderSecretField = 'secret_key' | 'webhook_secret' | 'signing_secret';

/** A webhook endpoint's signing secret, bound to its endpoint (src/domain/webhookEndpoints.ts). */
export type WebhookEndpointSecretField = `webhook_endpoint:${string}`;

/** Whose secret it is: bound into the ciphertext (AAD). */
export interface ProviderSecretContext {
  merchantId: string;
  environment: string;
  field: ProviderSecretField | WebhookEndpointSecretField;
}

/** A stored secret that does not decrypt (another key, tampered, or moved); never carries the text. */
export class ProviderSecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderSecretError';
  }
}

/**
 * Why a PROVIDER_SECRETS_KEY value is refused, or null when it is 32 bytes in base64. The value
 * itself is never part of the message.
 */
export function secretsKeyProblem(base64: string): string | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return 'must be base64 (e.g. `openssl rand -base64 32`)';
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length !== KEY_BYTES) {
    return `must be ${KEY_BYTES} bytes in base64 (e.g. \`openssl rand -base64 32\`); it decodes to ${bytes.length} bytes`;
  }
  return null;
}

/** The 32-byte key from its base64 text; throws (without the value) when it is not one. */
export function decodeSecretsKey(base64: string): Buffer {
  const problem = secretsKeyProblem(base64);
  if (problem) throw new ProviderSecretError(`PROVIDER_SECRETS_KEY ${problem}`);
  return Buffer.from(base64, 'base64');
}

/** The key id a ciphertext carries: 8 hex digits of SHA-256 of the key (never the key itself). */
export function secretsKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8);
}

/** PROVIDER_SECRETS_PREVIOUS_KEYS: comma-separated base64 keys; blanks ignored. */
export function splitPreviousKeys(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k.length > 0);
}

/** Why PROVIDER_SECRETS_PREVIOUS_KEYS is refused (naming the position, never a value), or null. */
export function previousKeysProblem(text: string): string | null {
  const keys = splitPreviousKeys(text);
  for (const [i, key] of keys.entries()) {
    const problem = secretsKeyProblem(key);
    if (problem) return `key ${i + 1} ${problem}`;
  }
  return null;
}

/** The key id of a stored ciphertext (`v2`), or null for a `v1` one (or text that is neither). */
export function ciphertextKeyId(stored: string): string | null {
  const parts = stored.split(':');
  return parts.length === 5 && parts[0] === VERSION_WITH_ID ? (parts[1] ?? null) : null;
}

function aad({ merchantId, environment, field }: ProviderSecretContext): Buffer {
  return Buffer.from(`${merchantId}:${environment}:${field}`, 'utf8');
}

export class ProviderSecrets {
  private readonly key: Buffer;
  /** The current key's id: every new ciphertext carries it. */
  readonly keyId: string;
  /** Keys that still decrypt (current first), by id. */
  private readonly keys = new Map<string, Buffer>();

  constructor(key: Buffer, previous: Buffer[] = []) {
    for (const k of [key, ...previous]) {
      if (k.length !== KEY_BYTES) throw new ProviderSecretError(`the secrets key must be ${KEY_BYTES} bytes`);
    }
    this.key = Buffer.from(key);
    this.keyId = secretsKeyId(this.key);
    this.keys.set(this.keyId, this.key);
    for (const k of previous) {
      const id = secretsKeyId(k);
      if (!this.keys.has(id)) this.keys.set(id, Buffer.from(k));
    }
  }

  /** PROVIDER_SECRETS_KEY, and PROVIDER_SECRETS_PREVIOUS_KEYS (comma-separated) that still decrypt. */
  static fromBase64(base64: string, previousKeys?: string): ProviderSecrets {
    const previous = splitPreviousKeys(previousKeys).map((k, i) => {
      const problem = secretsKeyProblem(k);
      if (problem) throw new ProviderSecretError(`PROVIDER_SECRETS_PREVIOUS_KEYS key ${i + 1} ${problem}`);
      return Buffer.from(k, 'base64');
    });
    return new ProviderSecrets(decodeSecretsKey(base64), previous);
  }

  encrypt(plaintext: string, context: ProviderSecretContext): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [
      VERSION_WITH_ID,
      this.keyId,
      iv.toString('base64'),
      tag.toString('base64'),
      ciphertext.toString('base64'),
    ].join(':');
  }

  /** True when `stored` is already sealed under the current key (nothing to re-encrypt). */
  isCurrent(stored: string): boolean {
    return ciphertextKeyId(stored) === this.keyId;
  }

  decrypt(stored: string, context: ProviderSecretContext): string {
    const parts = stored.split(':');
    let candidates: Buffer[];
    let rest: string[];
    if (parts.length === 5 && parts[0] === VERSION_WITH_ID) {
      const id = parts[1] as string;
      const key = this.keys.get(id);
      if (!key) {
        throw new ProviderSecretError(
          `the stored ${context.field} of ${context.merchantId} (${context.environment}) does not decrypt: it was sealed under key id ${id}, which is neither PROVIDER_SECRETS_KEY nor in PROVIDER_SECRETS_PREVIOUS_KEYS`,
        );
      }
      candidates = [key];
      rest = parts.slice(2);
    } else if (parts.length === 4 && parts[0] === VERSION) {
      // Sealed before key ids: with the then-current key, so the current key first.
      candidates = [...this.keys.values()];
      rest = parts.slice(1);
    } else {
      throw new ProviderSecretError(`the stored ${context.field} is not a ${VERSION} or ${VERSION_WITH_ID} ciphertext`);
    }
    const [ivText, tagText, bodyText] = rest as [string, string, string];
    const iv = Buffer.from(ivText, 'base64');
    const tag = Buffer.from(tagText, 'base64');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
      throw new ProviderSecretError(`the stored ${context.field} is malformed`);
    }
    for (const key of candidates) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad(context));
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(Buffer.from(bodyText, 'base64')), decipher.final()]).toString('utf8');
      } catch {
        // the next key, if any
      }
    }
    throw new ProviderSecretError(
      `the stored ${context.field} of ${context.merchantId} (${context.environment}) does not decrypt: another PROVIDER_SECRETS_KEY, or altered`,
    );
  }
}
