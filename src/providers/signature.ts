import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`: the scheme of both the
 * provider sandbox's webhooks to us and our callbacks to merchants. The key is the secret's
 * UTF-8 bytes.
 */
export function sign(secret: string, body: string, unixSeconds = Math.floor(Date.now() / 1000)): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`, 'utf8').digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

export function verify(
  secret: string,
  body: string,
  header: string | undefined,
  toleranceSeconds = 300,
  now = Date.now(),
): boolean {
  if (!header) return false;
  const parts = new Map(
    header.split(',').map((kv) => {
      const i = kv.indexOf('=');
      return [kv.slice(0, i).trim(), kv.slice(i + 1).trim()] as const;
    }),
  );
  const t = Number(parts.get('t'));
  const given = parts.get('v1');
  if (!Number.isInteger(t) || !given || !/^[0-9a-f]{64}$/.test(given)) return false;
  if (Math.abs(now / 1000 - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}
