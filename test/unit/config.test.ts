import { ConfigError, loadConfig, secretWeakness } from '../../src/config';

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
      WORKER_ROLE: 'all',
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

describe('loadConfig in production (PRODUCT.md, "Production profile")', () => {
  const productionReady = {
    NODE_ENV: 'production',
    DATA_DIR: '/tmp/nowhere-config-test',
    DATABASE_URL: 'postgres://u:p@db:5432/pay',
    TEMPORAL_ADDRESS: 'temporal:7233',
    PUBLIC_BASE_URL: 'https://pay.example.com',
    SANDBOX_API_KEY: 'sk_sandbox_Q2v9LkT4xWm7Rb1NfZ8cHd3JpYs6Ue0A',
    SANDBOX_WEBHOOK_SECRET: 'whsec_7GhK2mPq9RtV4wXy1Zb6Cd8Ef3Jn5Ls0',
    SANDBOX_ADMIN_TOKEN: 'kX4rT9mQ2vB7nL1pZ6wC8yH3jF5dS0gAeUo',
    CURSOR_SECRET: 'a-real-cursor-secret-of-at-least-32-characters',
    PROVIDER_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    TEMPORAL_PAYLOAD_KEYS: `k1:${Buffer.alloc(32, 8).toString('base64')}`,
  };

  it('starts with every production variable set', () => {
    expect(loadConfig(productionReady)).toMatchObject({
      NODE_ENV: 'production',
      SANDBOX_ADMIN_TOKEN: 'kX4rT9mQ2vB7nL1pZ6wC8yH3jF5dS0gAeUo',
      ALLOW_PRIVATE_CALLBACKS: false,
      externalDatabase: true,
      externalTemporal: true,
    });
  });

  it('refuses the development defaults and missing services, naming each variable in one message', () => {
    let error: unknown;
    try {
      loadConfig({ NODE_ENV: 'production', DATA_DIR: '/tmp/nowhere-config-test' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toMatch(/^Invalid configuration:\n/);
    for (const name of [
      'SANDBOX_API_KEY',
      'SANDBOX_WEBHOOK_SECRET',
      'SANDBOX_ADMIN_TOKEN',
      'DATABASE_URL',
      'TEMPORAL_ADDRESS',
      'PUBLIC_BASE_URL',
      'CURSOR_SECRET',
      'PROVIDER_SECRETS_KEY',
      'TEMPORAL_PAYLOAD_KEYS',
    ]) {
      expect(message).toMatch(new RegExp(`\\n  ${name}: `));
    }
  });

  it.each([
    ['SANDBOX_API_KEY', 'sk_sandbox_dev'],
    ['SANDBOX_WEBHOOK_SECRET', 'whsec_sandbox_dev'],
    ['SANDBOX_ADMIN_TOKEN', ''],
    ['DATABASE_URL', ''],
    ['TEMPORAL_ADDRESS', ''],
    ['PUBLIC_BASE_URL', ''],
    ['CURSOR_SECRET', ''],
    ['CURSOR_SECRET', 'cursor-secret-for-development-only'],
    ['PROVIDER_SECRETS_KEY', ''],
    ['TEMPORAL_PAYLOAD_KEYS', ''],
    ['TEMPORAL_PAYLOAD_KEYS', 'k1:c2hvcnQ='],
    ['TEMPORAL_PAYLOAD_KEYS', `k1:${Buffer.alloc(32).toString('base64')},k1:${Buffer.alloc(32).toString('base64')}`],
  ])('refuses %s=%j and names only it', (name, value) => {
    expect(() => loadConfig({ ...productionReady, [name]: value })).toThrow(
      new RegExp(`^Invalid configuration:\\n  ${name}: [^\\n]+$`),
    );
  });

  it.each([
    ['SANDBOX_ADMIN_TOKEN', 'admin-token-real', /too short/],
    ['SANDBOX_API_KEY', 'sk_sandbox_prod', /too short/],
    ['SANDBOX_WEBHOOK_SECRET', 'whsec_real_secret', /too short/],
    ['SANDBOX_ADMIN_TOKEN', 'changemechangemechangemechangeme', /too little variety/],
    ['SANDBOX_API_KEY', 'a'.repeat(64), /too little variety/],
    ['CURSOR_SECRET', 'abababababababababababababababababababab', /too little variety/],
    ['PUBLIC_BASE_URL', 'http://pay.example.com', /https/],
    ['PUBLIC_BASE_URL', 'http://10.0.0.5:3000', /https/],
    ['STRIPE_API_BASE', 'http://api.stripe.com', /https/],
    ['STRIPE_API_BASE', 'http://stripe-mock:12111', /https/],
  ])('refuses a weak or plain-http %s=%j and names only it (decision 0081)', (name, value, reason) => {
    let error: unknown;
    try {
      loadConfig({ ...productionReady, [name]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(new RegExp(`^Invalid configuration:\\n  ${name}: [^\\n]+$`));
    expect((error as Error).message).toMatch(reason);
    // The value itself is never printed.
    expect((error as Error).message).not.toContain(value);
  });

  it('names every weak secret and plain-http URL at once', () => {
    expect(() =>
      loadConfig({
        ...productionReady,
        SANDBOX_API_KEY: 'short',
        SANDBOX_ADMIN_TOKEN: 'short',
        PUBLIC_BASE_URL: 'http://pay.example.com',
        STRIPE_API_BASE: 'http://api.stripe.com',
      }),
    ).toThrow(/SANDBOX_API_KEY: .*\n {2}SANDBOX_ADMIN_TOKEN: .*\n {2}PUBLIC_BASE_URL: .*\n {2}STRIPE_API_BASE: /);
  });

  it.each([
    ['PUBLIC_BASE_URL', 'http://127.0.0.1:3000'],
    ['PUBLIC_BASE_URL', 'http://localhost:3000'],
    ['PUBLIC_BASE_URL', 'http://[::1]:3000'],
    ['STRIPE_API_BASE', 'http://127.0.0.1:12111'],
  ])('takes plain http to the loopback for %s (the one-machine cluster)', (name, value) => {
    expect(() => loadConfig({ ...productionReady, [name]: value })).not.toThrow();
  });

  it('judges random secrets strong: 32 characters of hex or base64 from openssl', () => {
    // Deterministic stand-ins of `openssl rand -hex 16` (12 distinct digits) and `-base64 24`.
    expect(secretWeakness('3f9a0c7be21d4f8a9c0b3e7d1a2f4c9b')).toBeNull();
    expect(secretWeakness('u8Yq3+Zk1Wv0Lx9T/2Rc4Nb7Pm6Sd5Fh')).toBeNull();
    expect(secretWeakness('x'.repeat(31))).toMatch(/too short/);
  });

  it('binds the metrics to the loopback unless METRICS_HOST says otherwise', () => {
    expect(loadConfig(productionReady).metricsHost).toBe('127.0.0.1');
    expect(loadConfig({ ...productionReady, HOST: '0.0.0.0' }).metricsHost).toBe('127.0.0.1');
    expect(loadConfig({ ...productionReady, METRICS_HOST: '0.0.0.0' }).metricsHost).toBe('0.0.0.0');
  });

  it('accepts the development defaults outside production', () => {
    expect(() => loadConfig({ NODE_ENV: 'development', DATA_DIR: '/tmp/nowhere-config-test' })).not.toThrow();
  });

  it('reads ALLOW_PRIVATE_CALLBACKS as a flag', () => {
    expect(loadConfig({ ...productionReady, ALLOW_PRIVATE_CALLBACKS: 'true' }).ALLOW_PRIVATE_CALLBACKS).toBe(true);
  });

  it('takes a worker role and refuses any other', () => {
    expect(loadConfig({ ...productionReady, WORKER_ROLE: 'subscriptions' }).WORKER_ROLE).toBe('subscriptions');
    expect(() => loadConfig({ ...productionReady, WORKER_ROLE: 'renewals' })).toThrow(
      /^Invalid configuration:\n {2}WORKER_ROLE: /,
    );
  });
});
