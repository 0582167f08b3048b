import type { z } from 'zod';
import { errors } from '../errors';

export interface ValidationIssue {
  path: string;
  code: string;
  message: string;
}

/** Turns zod issues into the published `details` shape: one entry per problem, by dotted path. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): {
  issues: ValidationIssue[];
  unknownFields?: string[];
} {
  const out: ValidationIssue[] = [];
  const unknownFields: string[] = [];
  for (const issue of issues) {
    const base = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const path = [...base, key].join('.');
        unknownFields.push(path);
        out.push({ path, code: 'unknown_field', message: `Unknown field "${path}".` });
      }
      continue;
    }
    out.push({ path: base.join('.'), code: issue.code, message: issue.message });
  }
  return unknownFields.length > 0 ? { issues: out, unknownFields } : { issues: out };
}

export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: 'body' | 'query' | 'path',
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details = describeIssues(result.error.issues);
  const summary = details.issues
    .slice(0, 3)
    .map((i) => (i.path ? `${i.path}: ${i.message}` : i.message))
    .join('; ');
  return throwValidation(`Invalid request ${where}: ${summary}`, details);
}

function throwValidation(message: string, details: Record<string, unknown>): never {
  throw errors.validation(message, details);
}
