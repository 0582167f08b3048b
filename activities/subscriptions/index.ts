import type { ActivityDeps } from '../deps';
import { createMailer, type Mailer } from '../emails';
import { createCardAuthorizationActivities } from './authorization';
import { createCardUpdateActivities } from './cardUpdate';
import { createInvoiceActivities } from './invoices';
import { createLifecycleActivities } from './lifecycle';

export type {
  CardChange,
  CardPage,
  CardUpdateState,
  CancelledAttempt,
  ChargeOutcome,
  ChargeRequest,
  OpenedAndCharged,
  OpenedInvoice,
  PeriodInvoiceInput,
} from './types';

/**
 * The subscription workflow's side effects: the provider (card authorization on the hosted page,
 * card updates, invoice charges) and PostgreSQL (src/domain/subscriptions.ts), one factory per
 * concern. Each is idempotent: the provider dedupes on our keys and each state change checks what
 * is recorded first.
 */
export function createSubscriptionActivities(deps: ActivityDeps, mailer: Mailer = createMailer(deps)) {
  return {
    ...createLifecycleActivities(deps),
    ...createCardAuthorizationActivities(deps),
    ...createCardUpdateActivities(deps),
    ...createInvoiceActivities(deps, mailer),
  };
}
