import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`: the scheme of both the
 * provider sandbox's webhooks to us and our callbacks to merchants. The key is the secret's
 * UTF-8 bytes.
 */
export function sign(secret: string, body: string, unixSeconds = Math.floor(Date.now() / 1000)): string {
  return signAll([secret], body, unixSeconds);
}

/**
 * One `v1` per secret, in order (`t=<unix>,v1=<new>,v1=<old>` during a rotation's overlap); a
 * receiver accepts when any matches.
 */
export function signAll(secrets: string[], body: string, unixSeconds = Math.floor(Date.now() / 1000)): string {
  const macs = secrets.map(
    (secret) => `v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`, 'utf8').digest('hex')}`,
  );
  return [`t=${unixSeconds}`, ...macs].join(',');
}

export function verify(
  secret: string,
  body: string,
  header: string | undefined,
  toleranceSeconds = 300,
  now = Date.now(),
): boolean {
  if (!header) return false;
  const parts = header.split(',').map((kv) => {
    const i = kv.indexOf('=');
    return [kv.slice(0, i).trim(), kv.slice(i + 1).trim()] as const;
  });
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  // Every `v1` counts (several during a rotation); any one matching is enough.
  const given = parts.filter(([k, v]) => k === 'v1' && /^[0-9a-f]{64}$/.test(v)).map(([, v]) => v);
  if (!Number.isInteger(t) || given.length === 0) return false;
  if (Math.abs(now / 1000 - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`, 'utf8').digest();
  return given.some((mac) => timingSafeEqual(expected, Buffer.from(mac, 'hex')));
}
