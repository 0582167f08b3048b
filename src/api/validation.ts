import type { z } from 'zod';
import { errors } from '../errors';
import { findUnstorableQueryText, findUnstorableText, type TextProblem, type UnstorableText } from './storableText';

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

const TEXT_PROBLEMS: Record<TextProblem, string> = {
  nul: 'contains U+0000 (NUL), which cannot be stored',
  lone_surrogate: 'contains a lone UTF-16 surrogate (not a Unicode character), which cannot be stored unchanged',
  invalid_utf8: 'is not valid UTF-8 once percent-decoded',
};

/** Unstorable text as validation issues (code `invalid_text`), on the same dotted paths as zod's. */
export function describeUnstorableText(found: readonly UnstorableText[]): ValidationIssue[] {
  return found.map((f) => ({
    path: f.path.map(String).join('.'),
    code: 'invalid_text',
    message: `${f.in === 'key' ? 'The field name' : 'The text'} ${TEXT_PROBLEMS[f.problem]}.`,
  }));
}

/** The text issues of a parsed JSON body: every string at any depth, object keys included. */
export function bodyTextIssues(body: unknown): ValidationIssue[] {
  return describeUnstorableText(findUnstorableText(body));
}

/** The text issues of a raw query string (its parameters as `ctx.query` decodes them). */
export function queryTextIssues(querystring: string): ValidationIssue[] {
  return describeUnstorableText(findUnstorableQueryText(querystring));
}

/**
 * Validates `value` against `schema`. `textIssues` (from `bodyTextIssues` / `queryTextIssues`)
 * are reported with the schema's own issues, so one answer names every problem.
 */
export function parseOrThrow<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: 'body' | 'query' | 'path',
  textIssues: readonly ValidationIssue[] = [],
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success && textIssues.length === 0) return result.data;
  const described = result.success ? { issues: [] } : describeIssues(result.error.issues);
  const details = { ...described, issues: [...textIssues, ...described.issues] };
  const summary = details.issues
    .slice(0, 3)
    .map((i) => (i.path ? `${i.path}: ${i.message}` : i.message))
    .join('; ');
  return throwValidation(`Invalid request ${where}: ${summary}`, details);
}

function throwValidation(message: string, details: Record<string, unknown>): never {
  throw errors.validation(message, details);
}
