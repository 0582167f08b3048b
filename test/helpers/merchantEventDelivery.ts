import type { MikroORM } from '@mikro-orm/postgresql';
import { Client, Connection } from '@temporalio/client';
import { createMerchantEventActivities } from '../../activities/merchantEvents';
import { createWorkflowStarters } from '../../src/worker';
import { recordEvent } from '../../src/domain/events';
import { Merchant, type KeyEnvironment } from '../../src/db/entities';
import type { ResolveHost } from '../../src/net/pinnedPost';
import type { ProviderRegistry } from '../../src/providers/registry';
import { createTestMerchant, openTestOrm, testLogger, testProviders, uniqueTaskQueue } from './stack';
import { paymentRow } from './records';
import { testStack } from '../setup/stackInfo';

/**
 * The merchant event deliverer (activities/merchantEvents.ts) called directly, on the real
 * database, for tests of one delivery: a merchant of its own, `payment.succeeded` events of
 * payments in a chosen environment, and deliverers with the options a test needs.
 */
export async function startDeliveryFixture(name: string) {
  const orm: MikroORM = await openTestOrm();
  const merchantId = (await createTestMerchant(orm, name)).merchantId;
  // The activities' dependencies include workflow starters (a Temporal client); delivering never uses them.
  const connection = await Connection.connect({ address: testStack().temporalAddress });
  const client = new Client({ connection, namespace: 'default' });

  /** A `payment.succeeded` event of a new payment, to `callbackUrl`; answers its id. */
  const eventFor = async (callbackUrl: string, environment: KeyEnvironment = 'test'): Promise<string> => {
    const em = orm.em.fork();
    const payment = paymentRow(em, merchantId, { environment, status: 'succeeded', callbackUrl });
    const event = recordEvent(em, {
      merchant: em.getReference(Merchant, merchantId),
      type: 'payment.succeeded',
      resourceId: payment.id,
      dedupeKey: `${payment.id}:payment.succeeded`,
      callbackUrl,
      environment,
      data: { id: payment.id, environment },
    });
    await em.flush();
    return event.id;
  };

  const deliverer = (
    opts: { privateTestCallbacks?: boolean; resolveHost?: ResolveHost; providers?: ProviderRegistry } = {},
  ) =>
    createMerchantEventActivities({
      orm,
      logger: testLogger,
      providers: opts.providers ?? testProviders(orm),
      publicBaseUrl: 'http://127.0.0.1:9',
      starters: createWorkflowStarters({
        client,
        taskQueue: uniqueTaskQueue('delivery'),
        callbackRetryInitialSeconds: 1,
      }),
      callbackTimeoutMs: 3_000,
      privateTestCallbacks: opts.privateTestCallbacks ?? true,
      ...(opts.resolveHost ? { resolveHost: opts.resolveHost } : {}),
    });

  const close = async () => {
    await connection.close();
    await orm.close();
  };
  return { orm, merchantId, eventFor, deliverer, close };
}
