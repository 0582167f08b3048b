import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger';
import { currentLogContext, withLogContext } from '../../src/logContext';

function captured() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: createLogger('info', 'test', destination), lines };
}

describe('log context', () => {
  it('every line written inside a scope carries its fields, across awaits; none outside', async () => {
    const { logger, lines } = captured();
    logger.info('before');
    await withLogContext({ requestId: 'req-1', workflowId: 'payment-1' }, async () => {
      logger.info({ paymentId: 'pay_1' }, 'first');
      await new Promise((resolve) => setTimeout(resolve, 1));
      logger.info('second');
    });
    logger.info('after');
    expect(
      lines.map(({ msg, requestId, workflowId, paymentId }) => ({ msg, requestId, workflowId, paymentId })),
    ).toEqual([
      { msg: 'before' },
      { msg: 'first', requestId: 'req-1', workflowId: 'payment-1', paymentId: 'pay_1' },
      // A line's own fields never stay behind in the scope.
      { msg: 'second', requestId: 'req-1', workflowId: 'payment-1' },
      { msg: 'after' },
    ]);
    expect(currentLogContext()).toBeUndefined();
  });

  it("a line's own requestId wins over the scope's", () => {
    const { logger, lines } = captured();
    withLogContext({ requestId: 'req-scope' }, () => logger.info({ requestId: 'req-own' }, 'x'));
    expect(lines[0]).toMatchObject({ requestId: 'req-own' });
  });
});
