import { ConfigError, loadConfig } from '../../src/config';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({ DATA_DIR: '/tmp/nowhere-config-test' });
    expect(config).toMatchObject({
      PORT: 3000,
      SANDBOX_PORT: 3100,
      TEMPORAL_PORT: 7233,
      TEMPORAL_UI_PORT: 8233,
      PG_PORT: 5433,
      SMTP_PORT: 2525,
      PAYMENT_WAIT_MS: 5000,
      REFUND_WAIT_MS: 5000,
      BILLING_DAY_SECONDS: 86400,
      TEMPORAL_NAMESPACE: 'default',
      databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5433/payments',
      temporalAddress: '127.0.0.1:7233',
      externalDatabase: false,
      externalTemporal: false,
    });
  });

  it('uses production services when their variables are set', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/pay', TEMPORAL_ADDRESS: 'temporal:7233' });
    expect(config).toMatchObject({
      databaseUrl: 'postgres://u:p@db:5432/pay',
      temporalAddress: 'temporal:7233',
      externalDatabase: true,
      externalTemporal: true,
    });
  });

  it.each([
    ['PORT', 'abc'],
    ['PG_PORT', '70000'],
    ['DATABASE_URL', 'mysql://x@y/z'],
    ['LOG_LEVEL', 'loud'],
    ['AUTH_CACHE_TTL_MS', '60000'],
  ])('stops on a bad %s and names it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^Invalid configuration:\\n  ${name}:`));
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '', DATA_DIR: '/tmp/nowhere-config-test' }).PORT).toBe(3000);
  });
});
