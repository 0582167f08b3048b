import fs from 'node:fs';
import path from 'node:path';
import { allRoutes } from '../../src/api/app';
import { buildOpenApi } from '../../src/api/openapi';
import { AppError, ERROR_CODES, statusOf, type ErrorCode } from '../../src/errors';
import {
  FAILURE_ERROR_CODE,
  OUTCOME_ERROR_CODE,
  PROVIDER_ERROR_CODE,
  PROVIDER_FAILURE,
  PROVIDER_OUTCOME,
  outcomeOfFailure,
  rejectionErrorCode,
} from '../../src/rules/providerFailures';

const root = path.resolve(__dirname, '../..');
const codes = Object.keys(ERROR_CODES) as ErrorCode[];

/** The OpenAPI document of the product's routes (their handlers never run: no dependency is used). */
function document(): {
  info: { description: string };
  paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
} {
  const deps = {
    orm: { em: {} },
    client: {},
    providers: {},
    settings: { cursorSecret: 'a-cursor-secret-of-at-least-32-characters' },
  } as unknown as Parameters<typeof allRoutes>[0];
  return buildOpenApi(allRoutes(deps)) as ReturnType<typeof document>;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(file);
    return entry.name.endsWith('.ts') ? [file] : [];
  });
}

describe('the error vocabulary', () => {
  it('gives every code a client status and a description', () => {
    for (const code of codes) {
      const { status, description } = ERROR_CODES[code];
      expect([code, Number.isInteger(status) && status >= 400 && status < 600]).toEqual([code, true]);
      expect([code, description.trim().length > 0]).toEqual([code, true]);
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
    }
  });

  it('keeps the statuses clients see (PRODUCT.md, "API conventions")', () => {
    expect(Object.fromEntries(codes.map((code) => [code, statusOf(code)]))).toEqual({
      validation_error: 400,
      invalid_json: 400,
      bad_request: 400,
      unsupported_media_type: 415,
      payload_too_large: 413,
      unauthorized: 401,
      forbidden: 403,
      merchant_inactive: 403,
      not_found: 404,
      method_not_allowed: 405,
      invalid_card_token: 400,
      card_declined: 402,
      external_id_conflict: 400,
      provider_rejected: 400,
      provider_not_configured: 500,
      provider_invalid_response: 502,
      provider_unavailable: 503,
      payment_not_refundable: 409,
      refund_in_flight: 409,
      charge_disputed: 409,
      dispute_not_updatable: 409,
      webhook_endpoint_limit: 409,
      webhook_endpoint_disabled: 409,
      amount_exceeds_refundable: 422,
      concurrent_request: 409,
      subscription_not_updatable: 409,
      test_clock_advancing: 409,
      test_clock_full: 409,
      payment_method_in_use: 409,
      invalid_signature: 400,
      rate_limited: 429,
      quota_exceeded: 429,
      not_ready: 503,
      service_unavailable: 503,
      internal_error: 500,
    });
  });

  it('answers an AppError with the status of its code', () => {
    const err = new AppError('refund_in_flight', 'A previous refund is in flight.', { refundId: 're_1' });
    expect([err.status, err.code, err.details]).toEqual([409, 'refund_in_flight', { refundId: 're_1' }]);
  });

  it('publishes every code of the table in the OpenAPI document, with its status', () => {
    const { info } = document();
    for (const code of codes) {
      expect(info.description).toContain(`- \`${code}\` (${statusOf(code)}): ${ERROR_CODES[code].description}`);
    }
  });

  it("lists each route's codes under the status the table gives them, and only published codes", () => {
    const { paths } = document();
    const seen = new Set<string>();
    for (const [where, operations] of Object.entries(paths)) {
      for (const [method, { responses }] of Object.entries(operations)) {
        for (const [status, { description }] of Object.entries(responses)) {
          for (const match of description.matchAll(/`(\w+)`/g)) {
            const code = match[1]!;
            seen.add(code);
            expect([method, where, code, code in ERROR_CODES && statusOf(code as ErrorCode)]).toEqual([
              method,
              where,
              code,
              Number(status),
            ]);
          }
        }
      }
    }
    expect(seen.size).toBeGreaterThan(10);
  });

  it('is built from codes only: no source file builds an AppError with a status', () => {
    const files = ['src', 'activities', 'workflows'].flatMap((dir) => sourceFiles(path.join(root, dir)));
    expect(files.length).toBeGreaterThan(50);
    const offenders = files.filter((file) => /new AppError\(\s*\d/.test(fs.readFileSync(file, 'utf8')));
    expect(offenders.map((file) => path.relative(root, file))).toEqual([]);
  });

  it('names no HTTP status in the domain', () => {
    const files = sourceFiles(path.join(root, 'src/domain'));
    const offenders = files.flatMap((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          /\b(4\d\d|5\d\d)\b/.test(line) ? [`${path.relative(root, file)}:${i + 1}: ${line.trim()}`] : [],
        ),
    );
    expect(offenders).toEqual([]);
  });
});

describe('the provider failure vocabulary (src/rules/providerFailures.ts)', () => {
  it('keeps the values recorded in workflow histories', () => {
    expect(PROVIDER_FAILURE).toEqual({
      unavailable: 'unavailable',
      timeout: 'timeout',
      invalidResponse: 'invalid_response',
      rejected: 'rejected',
      misconfigured: 'misconfigured',
    });
    expect(PROVIDER_OUTCOME).toEqual({
      unavailable: 'provider_unavailable',
      timeout: 'provider_timeout',
      invalid: 'provider_invalid',
    });
  });

  it('maps every failure kind and outcome to a published code', () => {
    for (const code of [
      ...Object.values(PROVIDER_ERROR_CODE),
      ...Object.values(FAILURE_ERROR_CODE),
      ...Object.values(OUTCOME_ERROR_CODE),
    ]) {
      expect(ERROR_CODES).toHaveProperty(code);
    }
    expect(Object.keys(FAILURE_ERROR_CODE).sort()).toEqual(Object.values(PROVIDER_FAILURE).sort());
    expect(Object.keys(OUTCOME_ERROR_CODE).sort()).toEqual(Object.values(PROVIDER_OUTCOME).sort());
  });

  it('answers a failed first call by its type, and a refusal by its code', () => {
    expect(outcomeOfFailure('unavailable')).toBe('provider_unavailable');
    expect(outcomeOfFailure('invalid_response')).toBe('provider_invalid');
    expect(outcomeOfFailure('timeout')).toBe('provider_timeout');
    expect(outcomeOfFailure('unavailable_after_earlier_call')).toBe('provider_timeout');
    expect(outcomeOfFailure(undefined)).toBe('provider_timeout');
    expect(rejectionErrorCode('invalid_card_token')).toBe('invalid_card_token');
    expect(rejectionErrorCode('provider_not_configured')).toBe('provider_not_configured');
    expect(rejectionErrorCode('card_declined')).toBe('provider_rejected');
    expect(rejectionErrorCode(null)).toBe('provider_rejected');
  });
});
