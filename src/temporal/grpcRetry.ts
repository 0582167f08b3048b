import {
  InterceptingCall,
  type Interceptor,
  type InterceptingListener,
  type Metadata,
  RequesterBuilder,
  status as grpcStatus,
  type StatusObject,
} from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, type GrpcRetryOptions } from '@temporalio/client';

/**
 * The Temporal client's retries of a failed call (UNAVAILABLE, RESOURCE_EXHAUSTED...), with the
 * SDK's own backoff and retryable statuses (`defaultGrpcRetryOptions`), and two things the SDK's
 * interceptor (1.24) does not do:
 * - A cancelled call stops retrying. The SDK's keeps its backoff timer and sends the retry anyway,
 *   uncancellable: the API cancels the Update-with-Start it no longer waits for (its outcome hint
 *   came first), and a concurrent request for the same workflow is answered RESOURCE_EXHAUSTED.
 * - A retry due after the connection closed ends the call with the status it had, instead of
 *   throwing "Channel has been shut down" from the timer (an uncaught exception in the process
 *   that closed its connection: the API at shutdown, a test at its end).
 * Install it as the connection's `interceptors` (replacing the SDK's default one).
 */
export function cancellableRetryInterceptor(retry: GrpcRetryOptions = defaultGrpcRetryOptions()): Interceptor {
  return (options, nextCall) => {
    let request: unknown;
    let cancelled = false;
    /** Waiting to retry. */
    let backoff: NodeJS.Timeout | undefined;
    /** A retry in flight. */
    let retryCall: ReturnType<typeof nextCall> | undefined;
    /** Ends the call for its caller, once: the response (if any), then the status. */
    let finish: ((status: StatusObject) => void) | undefined;
    let lastStatus: StatusObject | undefined;
    const settle = (status: StatusObject) => {
      const end = finish;
      finish = undefined;
      end?.(status);
    };

    const requester = new RequesterBuilder()
      .withStart((metadata: Metadata, caller: InterceptingListener, next) => {
        let attempt = 1;
        let response: { message: unknown } | undefined;
        const onStatus = (status: StatusObject) => {
          retryCall = undefined;
          lastStatus = status;
          if (!cancelled && retry.retryableDecider(attempt, status)) {
            backoff = setTimeout(again, retry.delayFunction(attempt, status));
          } else {
            settle(status);
          }
        };
        const again = () => {
          backoff = undefined;
          attempt++;
          let call: ReturnType<typeof nextCall>;
          try {
            call = nextCall(options);
          } catch {
            // The channel is closed: no retry is possible, the call ends as it stood.
            settle(lastStatus!);
            return;
          }
          retryCall = call;
          call.start(metadata, {
            onReceiveMessage: (message: unknown) => (response = { message }),
            onReceiveStatus: onStatus,
          });
          call.sendMessage(request);
          call.halfClose();
        };
        finish = (status) => {
          if (response) caller.onReceiveMessage(response.message);
          caller.onReceiveStatus(status);
        };
        next(metadata, {
          onReceiveMessage: (message: unknown) => (response = { message }),
          onReceiveStatus: onStatus,
        });
      })
      .withSendMessage((message, next) => {
        request = message;
        next(message);
      })
      .withCancel((next) => {
        cancelled = true;
        if (backoff) {
          clearTimeout(backoff);
          backoff = undefined;
          // Waiting between tries: nothing is in flight; the call ends with its last status.
          settle(lastStatus!);
        }
        // A retry in flight ends with its CANCELLED status (reported through onStatus).
        retryCall?.cancelWithStatus(grpcStatus.CANCELLED, 'Cancelled on client');
        next();
      })
      .build();
    return new InterceptingCall(nextCall(options), requester);
  };
}
