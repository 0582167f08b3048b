import { z } from 'zod';

/** Shared response building blocks. Timestamps: ISO 8601 UTC with milliseconds; absent ones null. */
export const timestamp = z.iso.datetime().describe('ISO 8601 UTC timestamp with milliseconds');
export const nullableTimestamp = timestamp.nullable();

export const errorBody = z
  .object({
    code: z.string().describe('stable snake_case error code'),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Error' });

export function iso(date: Date): string;
export function iso(date: Date | null): string | null;
export function iso(date: Date | null): string | null {
  return date ? date.toISOString() : null;
}
