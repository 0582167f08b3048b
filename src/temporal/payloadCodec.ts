import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { DataConverter, LoadedDataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/**
 * Workflow and activity payloads encrypted before they leave the process (decision 0078): card
 * tokens, emails and names never reach Temporal's history or its UI in clear. AES-256-GCM, a fresh
 * 12-byte IV per payload; the whole original payload (its metadata and data) is the plaintext, so
 * its encoding is hidden too. The key ring comes from TEMPORAL_PAYLOAD_KEYS: `id:base64,...`, the
 * first encodes, every one listed decodes (rotation: put the new key first, keep the old ones
 * listed while histories encrypted under them are kept). A payload without our encoding (every
 * history written before this codec, the recorded histories the replay test runs) passes through.
 */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata: which key of the ring encrypted the payload. */
export const KEY_ID_METADATA = 'encryption-key-id';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : undefined);

/** A payload that does not decrypt: an unknown key id, tampered bytes. Never carries the payload. */
export class PayloadDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadDecryptionError';
  }
}

export interface PayloadKey {
  id: string;
  key: Buffer;
}

/**
 * Why a TEMPORAL_PAYLOAD_KEYS value is refused, or null when it is a list of `id:base64` entries of
 * 32-byte keys with distinct ids. Key bytes are never part of the message.
 */
export function payloadKeysProblem(value: string): string | null {
  const entries = value.split(',').map((e) => e.trim());
  if (entries.length === 0 || entries.some((e) => e === '')) return 'must be `id:base64[,id:base64...]`';
  const ids = new Set<string>();
  for (const entry of entries) {
    const at = entry.indexOf(':');
    const id = at < 0 ? '' : entry.slice(0, at);
    const base64 = at < 0 ? '' : entry.slice(at + 1);
    if (!KEY_ID.test(id)) return 'each entry must be `id:base64` with an id of letters, digits, `_`, `.` or `-`';
    if (ids.has(id)) return `key id ${id} is listed twice`;
    ids.add(id);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || Buffer.from(base64, 'base64').length !== KEY_BYTES) {
      return `key ${id} must be ${KEY_BYTES} bytes in base64 (e.g. \`openssl rand -base64 32\`)`;
    }
  }
  return null;
}

/** The key ring of a TEMPORAL_PAYLOAD_KEYS value; throws (without key bytes) when it is not one. */
export function parsePayloadKeys(value: string): PayloadKey[] {
  const problem = payloadKeysProblem(value);
  if (problem) throw new PayloadDecryptionError(`TEMPORAL_PAYLOAD_KEYS ${problem}`);
  return value.split(',').map((entry) => {
    const at = entry.trim().indexOf(':');
    const trimmed = entry.trim();
    return { id: trimmed.slice(0, at), key: Buffer.from(trimmed.slice(at + 1), 'base64') };
  });
}

/** A fresh one-key ring's text (development: `npm start` keeps one under DATA_DIR). */
export function newPayloadKeys(id = `k${new Date().toISOString().slice(0, 10).replaceAll('-', '')}`): string {
  return `${id}:${randomBytes(KEY_BYTES).toString('base64')}`;
}

export class EncryptionCodec implements PayloadCodec {
  private readonly encoder: PayloadKey;
  private readonly keys: ReadonlyMap<string, Buffer>;

  constructor(ring: PayloadKey[]) {
    const [first] = ring;
    if (!first) throw new PayloadDecryptionError('the payload key ring is empty');
    for (const { id, key } of ring) {
      if (key.length !== KEY_BYTES) throw new PayloadDecryptionError(`payload key ${id} must be ${KEY_BYTES} bytes`);
    }
    this.encoder = first;
    this.keys = new Map(ring.map(({ id, key }) => [id, Buffer.from(key)]));
  }

  static fromEnv(value: string): EncryptionCodec {
    return new EncryptionCodec(parsePayloadKeys(value));
  }

  /** The key id new payloads are encrypted under. */
  get encodingKeyId(): string {
    return this.encoder.id;
  }

  /** Async: a refusal is a rejected promise, never a throw. */
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decrypt(payload));
  }

  private encrypt(payload: Payload): Payload {
    const plaintext = temporal.api.common.v1.Payload.encode(payload).finish();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.encoder.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(utf8(this.encoder.id));
    const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return {
      metadata: { encoding: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(this.encoder.id) },
      // iv | ciphertext | tag
      data: new Uint8Array(Buffer.concat([iv, body, cipher.getAuthTag()])),
    };
  }

  private decrypt(payload: Payload): Payload {
    if (text(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) return payload;
    const id = text(payload.metadata?.[KEY_ID_METADATA]) ?? '';
    const key = this.keys.get(id);
    if (!key)
      throw new PayloadDecryptionError(
        `payload encrypted under key ${JSON.stringify(id)}, which TEMPORAL_PAYLOAD_KEYS does not list`,
      );
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError('encrypted payload is truncated');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(utf8(id));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plaintext = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return temporal.api.common.v1.Payload.decode(plaintext);
    } catch {
      throw new PayloadDecryptionError(
        `payload under key ${id} does not decrypt: another key with that id, or altered`,
      );
    }
  }
}

/**
 * The data converter of every client and worker the product builds (API, workers, their clients,
 * test helpers): the SDK's default payload converter, then the encryption codec. Undefined
 * (no TEMPORAL_PAYLOAD_KEYS: development and tests that set none): payloads in clear, as before.
 * Spread into Client and Worker options: `new Client({ ..., ...payloadDataConverter(keys) })`.
 */
export function payloadDataConverter(keys: string | undefined): { dataConverter?: DataConverter } {
  return keys ? { dataConverter: { payloadCodecs: [EncryptionCodec.fromEnv(keys)] } } : {};
}

/**
 * Values of payloads read from a fetched history (history holds them as the codec left them):
 * decoded by the converter's codecs, last applied first, then converted. Reading them with the
 * payload converter alone would parse ciphertext.
 */
export async function decodeHistoryPayloads(converter: LoadedDataConverter, payloads: Payload[]): Promise<unknown[]> {
  let decoded = payloads;
  for (const codec of [...converter.payloadCodecs].reverse()) decoded = await codec.decode(decoded);
  return decoded.map((payload) => converter.payloadConverter.fromPayload(payload));
}
