import { settledLedger, type LedgerEntry } from '../stack';
import { printLedgerCheck } from '../report';
import { floorArms, measureGroup } from './floors';
import { combine, measure, type ScenarioResult } from './measure';
import type { RunStack } from './setup';

/** The ledger check of one POST slice: exactly one succeeded capture per 2xx answer, none twice. */
export interface PostLedgerCheck {
  answered2xx: number;
  answered2xxSucceededWithId: number;
  answered2xxOtherBody: number;
  capturesDuringRun: number;
  answeredWithExactlyOneSucceededCapture: number;
  answeredWithoutExactlyOneCapture: number;
  paymentsCapturedTwiceInWholeLedger: number;
  capturesWithoutA2xxAnswer: number;
  ok: boolean;
}

/** One slice of the token-flow POST /payments; every 2xx answer's payment id is kept for the ledger check. */
async function postSlice(stack: RunStack, name: string, connections: number, warmupS: number) {
  let collecting = false;
  const answered: string[] = [];
  let otherBody = 0;
  let ledgerStart = 0;
  const result = await measure(
    name,
    {
      url: `${stack.apiUrl}/payments`,
      connections,
      method: 'POST',
      headers: stack.postHeaders,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => ({ ...req, body: stack.paymentBody() }),
          onResponse: (status, body) => {
            if (!collecting || status < 200 || status >= 300) return;
            try {
              const parsed = JSON.parse(body) as { id?: string; status?: string };
              if (parsed.id && parsed.status === 'succeeded') answered.push(parsed.id);
              else otherBody++;
            } catch {
              otherBody++;
            }
          },
        },
      ],
    },
    {
      beforeMeasure: async () => {
        // Warm-up payments still in flight settle first, so the measured run starts at a known ledger index.
        ledgerStart = (await settledLedger(stack.sandboxUrl)).length;
        collecting = true;
      },
    },
    warmupS,
  );
  collecting = false;
  const check = await checkCaptures(stack.sandboxUrl, result, answered, otherBody, ledgerStart);
  return { result, check, answered };
}

/** Ledger check: exactly one capture per 2xx answer, and no payment captured twice. */
async function checkCaptures(
  sandboxUrl: string,
  result: ScenarioResult,
  answered: string[],
  otherBody: number,
  ledgerStart: number,
): Promise<PostLedgerCheck> {
  const entries = await settledLedger(sandboxUrl);
  const perKey = new Map<string, LedgerEntry[]>();
  for (const e of entries) {
    if (e.type !== 'capture' || !e.idempotencyKey) continue;
    perKey.set(e.idempotencyKey, [...(perKey.get(e.idempotencyKey) ?? []), e]);
  }
  const runCaptures = entries.slice(ledgerStart).filter((e) => e.type === 'capture');
  const answeredSet = new Set(answered);
  const wrong = answered.filter((id) => {
    const list = perKey.get(id) ?? [];
    return list.length !== 1 || list[0]?.status !== 'succeeded';
  });
  const duplicates = [...perKey.values()].filter((l) => l.length > 1).length;
  const withoutAnswer = runCaptures.filter((e) => !e.idempotencyKey || !answeredSet.has(e.idempotencyKey)).length;
  const check = {
    answered2xx: result.status2xx,
    answered2xxSucceededWithId: answered.length,
    answered2xxOtherBody: otherBody,
    capturesDuringRun: runCaptures.length,
    answeredWithExactlyOneSucceededCapture: answered.length - wrong.length,
    answeredWithoutExactlyOneCapture: wrong.length,
    paymentsCapturedTwiceInWholeLedger: duplicates,
    capturesWithoutA2xxAnswer: withoutAnswer,
    ok: wrong.length === 0 && duplicates === 0 && otherBody === 0 && answered.length === result.status2xx,
  };
  printLedgerCheck(check);
  return check;
}

/**
 * The token POST at `connections`: its bare floor and its work floor (a token payment's required
 * work) and the product's POST, in mirrored rounds; each arm's slices combined.
 */
export async function postGroup(stack: RunStack, name: string, connections: number) {
  const floors = floorArms(stack.floor, 'the token POST', connections, {
    kind: 'work',
    name: "work floor: a payment's required work",
  });
  const group = await measureGroup(floors, (warmupS) => postSlice(stack, name, connections, warmupS));
  return {
    result: combine(group.product.map((p) => p.result)),
    checks: group.product.map((p) => p.check),
    answered: group.product.flatMap((p) => p.answered),
    ...group.floors,
  };
}

export type PostGroup = Awaited<ReturnType<typeof postGroup>>;
