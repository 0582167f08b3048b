/** Small JSON-over-HTTP helpers for tests that call the real API. */

/** One problem in a 400 `validation_error` (`details.issues`). */
export interface Issue {
  path: string;
  code: string;
  message: string;
}

/** The API's error body. */
export interface ErrorBody {
  code: string;
  message: string;
  details: { issues?: Issue[]; unknownFields?: string[] } & Record<string, unknown>;
}
export interface JsonResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export async function call<T = Record<string, unknown>>(
  baseUrl: string,
  method: string,
  path: string,
  auth: string | undefined,
  body?: unknown,
): Promise<JsonResponse<T>> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(auth ? { authorization: auth } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
}

export async function eventually<T>(
  fn: () => Promise<T>,
  check: (v: T) => boolean,
  timeoutMs = 15_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await fn();
  while (!check(last)) {
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, everyMs));
    last = await fn();
  }
  return last;
}
