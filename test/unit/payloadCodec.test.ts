import { defaultPayloadConverter } from '@temporalio/common';
import YAML from 'yaml';
import { devServerArgs } from '../../dev/infra/temporalDevServer';
import { renderUiConfig } from '../../dev/infra/temporalServerConfig';
import { codecEndpoint } from '../../src/api/routes/codec';
import {
  EncryptionCodec,
  newPayloadKeys,
  payloadDataConverter,
  payloadKeysProblem,
} from '../../src/temporal/payloadCodec';

describe('payload encryption settings (decision 0078)', () => {
  const base = { TEMPORAL_CODEC_CORS_ORIGINS: undefined, TEMPORAL_UI_PORT: 8233 };
  const converter = payloadDataConverter(newPayloadKeys('k1')).dataConverter;

  it('refuses malformed key rings without echoing key bytes', () => {
    expect(payloadKeysProblem(newPayloadKeys('k1'))).toBeNull();
    expect(payloadKeysProblem(`${newPayloadKeys('new')},${newPayloadKeys('old')}`)).toBeNull();
    const short = 'k1:c2VjcmV0LWtleS1ieXRlcw==';
    expect(payloadKeysProblem(short)).toMatch(/32 bytes/);
    expect(payloadKeysProblem(short)).not.toContain('c2VjcmV0');
    expect(payloadKeysProblem('no-id-here')).toMatch(/id:base64/);
    expect(payloadKeysProblem(`${newPayloadKeys('a')},${newPayloadKeys('a')}`)).toMatch(/twice/);
  });

  it('no key ring: no data converter and no codec endpoint', () => {
    expect(payloadDataConverter(undefined)).toEqual({});
    expect(codecEndpoint({ ...base, NODE_ENV: 'development', TEMPORAL_CODEC_TOKEN: undefined }, undefined)).toEqual({});
  });

  it('the endpoint is open without a token only outside production; a token always applies', () => {
    expect(
      codecEndpoint({ ...base, NODE_ENV: 'development', TEMPORAL_CODEC_TOKEN: undefined }, converter).codec,
    ).toMatchObject({ open: true, corsOrigins: ['http://localhost:8233', 'http://127.0.0.1:8233'] });
    const production = codecEndpoint({ ...base, NODE_ENV: 'production', TEMPORAL_CODEC_TOKEN: undefined }, converter);
    expect(production.codec).toMatchObject({ open: false });
    expect(production.codec?.token).toBeUndefined();
    expect(
      codecEndpoint(
        {
          ...base,
          NODE_ENV: 'production',
          TEMPORAL_CODEC_TOKEN: 'x'.repeat(32),
          TEMPORAL_CODEC_CORS_ORIGINS: 'https://ui.example/',
        },
        converter,
      ).codec,
    ).toMatchObject({ token: 'x'.repeat(32), corsOrigins: ['https://ui.example'] });
  });

  it('encrypts each payload afresh and round-trips it', async () => {
    const codec = EncryptionCodec.fromEnv(newPayloadKeys('k1'));
    const clear = defaultPayloadConverter.toPayload({ cardToken: 'tok_success' });
    const [a, b] = await codec.encode([clear, clear]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
    expect(defaultPayloadConverter.fromPayload((await codec.decode([a!]))[0]!)).toEqual({ cardToken: 'tok_success' });
  });

  it('npm start points the embedded UI at the codec endpoint', () => {
    const args = devServerArgs({
      cliPath: 'temporal',
      port: 7233,
      uiPort: 8233,
      uiCodecEndpoint: 'http://localhost:3000/codec',
    });
    expect(args.join(' ')).toContain('--ui-codec-endpoint http://localhost:3000/codec');
    expect(devServerArgs({ cliPath: 'temporal', port: 7233 }).join(' ')).not.toContain('codec');
  });

  it('npm run cluster points its UI server at the codec endpoint', () => {
    const ui = { frontendGrpcPort: 7233, uiPort: 8233 };
    expect(YAML.parse(renderUiConfig({ ...ui, codecEndpoint: 'http://localhost:3000/codec' }))).toMatchObject({
      codec: { endpoint: 'http://localhost:3000/codec' },
    });
    expect(YAML.parse(renderUiConfig(ui))).not.toHaveProperty('codec');
  });
});
