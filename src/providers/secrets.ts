import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Provider secrets (a Stripe secret key, a webhook signing secret) encrypted at rest with
 * AES-256-GCM under PROVIDER_SECRETS_KEY. Stored text: `v1:<iv>:<tag>:<ciphertext>`, each part
 * base64. A fresh 12-byte IV per encryption; the 16-byte tag is checked on decryption. The
 * additional authenticated data is `merchantId:environment:field`, so a ciphertext copied to
 * another merchant, environment or field does not decrypt.
 */
const VERSION = 'v1';
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

function aad({ merchantId, environment, field }: ProviderSecretContext): Buffer {
  return Buffer.from(`${merchantId}:${environment}:${field}`, 'utf8');
}

export class ProviderSecrets {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new ProviderSecretError(`the secrets key must be ${KEY_BYTES} bytes`);
    this.key = Buffer.from(key);
  }

  static fromBase64(base64: string): ProviderSecrets {
    return new ProviderSecrets(decodeSecretsKey(base64));
  }

  encrypt(plaintext: string, context: ProviderSecretContext): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [VERSION, iv.toString('base64'), tag.toString('base64'), ciphertext.toString('base64')].join(':');
  }

  decrypt(stored: string, context: ProviderSecretContext): string {
    const parts = stored.split(':');
    if (parts.length !== 4 || parts[0] !== VERSION) {
      throw new ProviderSecretError(`the stored ${context.field} is not a ${VERSION} ciphertext`);
    }
    const [, ivText, tagText, bodyText] = parts as [string, string, string, string];
    const iv = Buffer.from(ivText, 'base64');
    const tag = Buffer.from(tagText, 'base64');
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
      throw new ProviderSecretError(`the stored ${context.field} is malformed`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(context));
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(Buffer.from(bodyText, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new ProviderSecretError(
        `the stored ${context.field} of ${context.merchantId} (${context.environment}) does not decrypt: another PROVIDER_SECRETS_KEY, or altered`,
      );
    }
  }
}
