import { OutcomeHintListener, type OutcomeWait } from '../../src/db/outcomeHints';
import { testStack } from '../setup/stackInfo';
import { testLogger } from './stack';

/** An API's hint listener on the run's PostgreSQL, once it listens (at most 10 s). */
export async function listeningHints(applicationName: string): Promise<OutcomeHintListener> {
  const listener = OutcomeHintListener.start(testStack().databaseUrl, testLogger, applicationName);
  for (const end = Date.now() + 10_000; !listener.listening && Date.now() < end;) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return listener;
}

/** The hint a waiter hears within `ms`, or `none`: for a hint that should not come. */
export function heardWithin<T>(wait: OutcomeWait<T>, ms = 300): Promise<T | 'none'> {
  return Promise.race([wait.outcome, new Promise<'none'>((resolve) => setTimeout(() => resolve('none'), ms))]);
}
