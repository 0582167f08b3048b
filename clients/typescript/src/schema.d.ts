/**
 * Generated from the API's /openapi.json by openapi-typescript (npm run client:generate).
 * Do not edit: regenerate. `npm test` fails when this file no longer matches the API.
 */

export interface paths {
    "/customers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the caller's customers (its merchant and its key's environment), newest first.
         * @description Newest first (by creation time, then id); `nextCursor` fetches the next page (null on the last). Filters: `email` and `externalId` (exact).
         */
        get: operations["listCustomers"];
        put?: never;
        /**
         * Create a customer, or return the one this externalId names.
         * @description externalId is unique per merchant and environment: a replay with the same fields answers the same customer; with other fields, 400 `external_id_conflict`.
         */
        post: operations["createCustomer"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/customers/{customerId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a customer. */
        get: operations["getCustomer"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /**
         * Change a customer's email, name, metadata or default payment method.
         * @description Fields sent replace the current ones (`null` clears one). `defaultPaymentMethodId` must name one of the customer’s payment methods (else 404).
         */
        patch: operations["updateCustomer"];
        trace?: never;
    };
    "/customers/{customerId}/payment-methods": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The customer's payment methods (not deleted), newest first. */
        get: operations["listPaymentMethods"];
        put?: never;
        /**
         * Verify a card with the processor and keep it for the customer.
         * @description Each attach is a new payment method, even of a token attached before. The first one a customer without a default gets becomes its default. No money moves: no authentication, no ledger entry. An unknown token: 400 `invalid_card_token`; a declined verification: 402 `card_declined` with `details.declineCode`.
         */
        post: operations["attachPaymentMethod"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/customers/{customerId}/payment-methods/{paymentMethodId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Delete a payment method (the processor stops keeping the card).
         * @description Answers the payment method as it was, with `deleted: true`; a later use of it is 404. Deleting the default leaves the customer without one. The customer's last card a subscription can charge is kept while a subscription of the customer still charges (409 `payment_method_in_use`).
         */
        delete: operations["deletePaymentMethod"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/customers/{customerId}/payment-methods/setup": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A hosted page where the customer enters a card, kept for the customer.
         * @description Answers the page's `redirectUrl`, and the `paymentMethodId` the card will have. No money moves. When the customer completes the page, the processor's webhook adds the card (the customer's default when it has none); if the webhook never comes, the platform asks the processor itself, within minutes, for 25 hours.
         */
        post: operations["setupPaymentMethod"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/disputes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the caller's disputes (its merchant and its key's environment), newest first.
         * @description Newest first (by creation time, then id). A page holds at most `limit` items; `nextCursor` fetches the next one and is null on the last. Walking with cursors never shows an item twice nor skips one, however many are created meanwhile (new items appear on a walk started afterwards). A cursor is bound to its list, its filters and the caller: another one, or one altered, is 400 `validation_error`. Filters: `status`, `paymentId`.
         */
        get: operations["listDisputes"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/disputes/{disputeId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a dispute (chargeback) the processor opened on a payment. */
        get: operations["getDispute"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/disputes/{disputeId}/accept": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Accept the dispute: `accepted`, which counts as lost.
         * @description Only while the dispute is `needs_response`, else 409 `dispute_not_updatable`.
         */
        post: operations["acceptDispute"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/disputes/{disputeId}/evidence": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Keep the merchant's evidence, or send it to the processor (`submit: true`: `under_review`).
         * @description Only while the dispute is `needs_response`, else 409 `dispute_not_updatable`. The processor decides the dispute later (`dispute.closed`).
         */
        post: operations["submitDisputeEvidence"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the caller's events (its merchant and its key's environment), newest first.
         * @description Newest first (by creation time, then id). A page holds at most `limit` items; `nextCursor` fetches the next one and is null on the last. A cursor is bound to its list, its filters and the caller: another one, or one altered, is 400 `validation_error`. Events are kept 30 days. Filters: `type` (exact, or a family as `payment.*`), `objectId`, `createdFrom` (inclusive) and `createdTo` (exclusive).
         */
        get: operations["listEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/{eventId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve an event, with every attempt to deliver it. */
        get: operations["getEvent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events/{eventId}/resend": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Send an event once more (the same id and body), to one endpoint or to all its destinations.
         * @description 202 with the new attempts, `pending`; each is delivered within moments and retried like any delivery, whether earlier deliveries succeeded or not. `{ "endpointId": "we_..." }`: that endpoint (404 `not_found` when it is not the caller's, 409 `webhook_endpoint_disabled` when disabled). `{}`: the record's callbackUrl if the event has one, and every endpoint the event was delivered to that still exists and is enabled; none: 202 with `deliveries: []`. The attempts show on GET /events/{id}.
         */
        post: operations["resendEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/merchant/api-keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the caller's API keys of the calling key's environment, active and revoked (public part only), newest first. */
        get: operations["listApiKeys"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the caller's payments (its merchant and its key's environment), newest first.
         * @description Newest first (by creation time, then id). A page holds at most `limit` items; `nextCursor` fetches the next one and is null on the last. Walking with cursors never shows an item twice nor skips one, however many are created meanwhile (new items appear on a walk started afterwards). A cursor is bound to its list, its filters and the caller: another one, or one altered, is 400 `validation_error`. Filters: `status`, `externalId`, `createdFrom` (inclusive) and `createdTo` (exclusive).
         */
        get: operations["listPayments"];
        put?: never;
        /**
         * Create a payment (hosted page, or saved-card token) or return the one this externalId names.
         * @description With `cardToken` the answer carries the outcome (`succeeded` or `failed`), or `requires_action` (send the customer to `nextAction.url` to authenticate; the outcome follows as an event) or `processing` (the processor decides later; the outcome follows as an event); without, the payment is `created` with a `redirectUrl` for the customer. The same externalId with the same amount and currency returns the existing payment.
         */
        post: operations["createPayment"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments/{paymentId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a payment. */
        get: operations["getPayment"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments/{paymentId}/refund": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Refund a captured payment in full or in part (the same externalId returns the existing refund).
         * @description Checks, in order: 404, replay (same externalId on this payment), 400 (currency, amount), 409 `payment_not_refundable`, 409 `refund_in_flight`, 409 `charge_disputed` (a dispute of the payment is open), 422 `amount_exceeds_refundable`, 429 `quota_exceeded` (the payment has its maximum number of refunds, QUOTA_REFUNDS_PER_PAYMENT, default 100). The answer is the refund, terminal or `pending`.
         */
        post: operations["createRefund"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/payments/{paymentId}/refunds": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a payment's refunds, newest first (possibly empty). */
        get: operations["listRefunds"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/refunds/{refundId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a refund. */
        get: operations["getRefund"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/subscriptions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the caller's subscriptions (its merchant and its key's environment), newest first.
         * @description Newest first (by creation time, then id). A page holds at most `limit` items; `nextCursor` fetches the next one and is null on the last. Walking with cursors never shows an item twice nor skips one, however many are created meanwhile (new items appear on a walk started afterwards). A cursor is bound to its list, its filters and the caller: another one, or one altered, is 400 `validation_error`. Filters: `status`, `externalId`.
         */
        get: operations["listSubscriptions"];
        put?: never;
        /**
         * Create a subscription (saved-card token, or card authorized by the customer at `redirectUrl`).
         * @description With `cardToken` the first charge is made at once and the answer is `active` (or `past_due` when declined or awaiting the customer’s authentication, `pending` when the processor decides later; a free first phase activates without a charge). Without, the answer is `pending` with a `redirectUrl` where the customer authorizes a card. The same externalId with the same amount and currency returns the existing subscription.
         */
        post: operations["createSubscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/subscriptions/{subscriptionId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a subscription (from PostgreSQL; workers need not be up). */
        get: operations["getSubscription"];
        put?: never;
        post?: never;
        /**
         * Cancel a subscription now and for good; answers it in its resulting state.
         * @description Query: `reason` (recorded as `cancellationReason`, default `merchant_request`), `notify` (`true`|`false`, default true: email the customer). The current period stays valid (`currentPeriodEnd` unchanged), no proration, open invoices are voided; a charge already in flight finishes first and no new one starts. A cancelled subscription is answered unchanged.
         */
        delete: operations["cancelSubscription"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/subscriptions/{subscriptionId}/invoices": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a subscription's invoices (one per billing period), newest first.
         * @description Newest first (by creation time, then id). A page holds at most `limit` items; `nextCursor` fetches the next one and is null on the last. Walking with cursors never shows an item twice nor skips one, however many are created meanwhile (new items appear on a walk started afterwards). A cursor is bound to its list, its filters and the caller: another one, or one altered, is 400 `validation_error`.
         */
        get: operations["listInvoices"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/subscriptions/{subscriptionId}/payment-method": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Replace the card of an active or past_due subscription (a token, or a hosted page).
         * @description With `cardToken` the provider verifies the card (no money moves) and it is charged from the next attempt on; a `past_due` subscription is charged at once with it (the open invoice’s next attempt), and the answer shows the outcome; the retry schedule restarts only if that charge is declined. With `{}` the answer carries a `redirectUrl` where the customer enters a card; the old card is charged until they complete it (a `past_due` subscription is then charged at once). A repeat of the same request changes nothing more. Other statuses: 409 `subscription_not_updatable`.
         */
        post: operations["updateSubscriptionPaymentMethod"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/test-clocks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the caller's test clocks, newest first (by real creation time). */
        get: operations["listTestClocks"];
        put?: never;
        /**
         * Create a test clock (test keys only): subscriptions created on it live on its time.
         * @description A subscription created with `testClock` waits for the clock, not for real time: nothing becomes due while it stands still; `POST /test-clocks/{id}/advance` makes everything due happen in clock-time order. Live keys: 404.
         */
        post: operations["createTestClock"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/test-clocks/{testClockId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a test clock. */
        get: operations["getTestClock"];
        put?: never;
        post?: never;
        /** Delete a test clock: its subscriptions are cancelled (reason `test_clock_deleted`, no emails; their `subscription.cancelled` events fire). */
        delete: operations["deleteTestClock"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/test-clocks/{testClockId}/advance": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Advance a test clock: everything due up to `frozenTime` happens in clock-time order.
         * @description Answers the clock `advancing`; it reads `frozenTime` and `ready` once every renewal, retry, decline, email and event due by then happened and every charge it made is decided. While advancing, an advance, a create on the clock and its DELETE are 409 `test_clock_advancing`.
         */
        post: operations["advanceTestClock"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook-endpoints": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The webhook endpoints of the key's environment, newest first (secrets are never listed). */
        get: operations["listWebhookEndpoints"];
        put?: never;
        /**
         * Create a webhook endpoint for the key's environment; the answer carries its signing secret (only here).
         * @description At most 16 per merchant and environment (409 `webhook_endpoint_limit`).
         */
        post: operations["createWebhookEndpoint"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhook-endpoints/{webhookEndpointId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retrieve a webhook endpoint (without its secret). */
        get: operations["getWebhookEndpoint"];
        put?: never;
        post?: never;
        /** Delete a webhook endpoint: nothing is sent to it any more. */
        delete: operations["deleteWebhookEndpoint"];
        options?: never;
        head?: never;
        /**
         * Change the url, enabledEvents, description or status (`enabled` | `disabled`) of an endpoint.
         * @description Only the fields given change; `description: null` clears it.
         */
        patch: operations["updateWebhookEndpoint"];
        trace?: never;
    };
    "/webhook-endpoints/{webhookEndpointId}/rotate-secret": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A new signing secret (answered only here); the previous one still signs for `overlapHours`.
         * @description During the overlap deliveries carry both signatures. `overlapHours` 0..168 (default 24); 0 drops the previous secret at once.
         */
        post: operations["rotateWebhookEndpointSecret"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        ApiKey: {
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            /** @enum {string} */
            environment: "test" | "live";
            id: string;
            isActive: boolean;
            lastUsedAt: string | null;
            /** @description public part only; secrets are never returned */
            publicKey: string;
            revokedAt: string | null;
            /** @enum {string} */
            role: "merchant" | "admin";
        };
        Customer: {
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            /** @description the payment method charged when a payment or subscription names neither a method nor a token */
            defaultPaymentMethodId: string | null;
            email: string | null;
            externalId: string;
            /** @description `cus_...` */
            id: string;
            metadata: {
                [key: string]: string;
            } | null;
            name: string | null;
            /** @description the test clock it lives on (its `createdAt` is the clock’s time), or null */
            testClock: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            updatedAt: string;
        };
        DeletedPaymentMethod: {
            card: {
                brand: string | null;
                expMonth: number | null;
                expYear: number | null;
                last4: string | null;
            };
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            customerId: string;
            /** @constant */
            deleted: true;
            /** @description `pm_...` */
            id: string;
            /** @description the processor that verified and keeps the card (`sandbox`, `stripe`) */
            processor: string;
        };
        DeletedTestClock: {
            /**
             * Format: date-time
             * @description real time
             */
            createdAt: string;
            /** @constant */
            deleted: true;
            /**
             * Format: date-time
             * @description the clock's time (moves in steps while `advancing`)
             */
            frozenTime: string;
            /** @description `clk_...` */
            id: string;
            name: string | null;
            /**
             * @description `advancing` until everything due up to the advance’s `frozenTime` happened and every charge is decided
             * @enum {string}
             */
            status: "ready" | "advancing";
            /** @description its subscriptions not cancelled (at most 100) */
            subscriptionCount: number;
        };
        DeletedWebhookEndpoint: {
            /** @constant */
            deleted: true;
            id: string;
        };
        Dispute: {
            amount: number;
            closedAt: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            currency: string;
            evidence: {
                /** @description null until sent to the processor */
                submittedAt: string | null;
                text: string;
            } | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            evidenceDueBy: string;
            id: string;
            paymentId: string;
            providerDisputeId: string;
            reason: string;
            /** @enum {string} */
            status: "needs_response" | "under_review" | "won" | "lost" | "accepted";
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            updatedAt: string;
        };
        Error: {
            /** @description stable snake_case error code */
            code: string;
            details: {
                [key: string]: unknown;
            };
            message: string;
        };
        Event: {
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            /** @description the object as the API returned it when the event happened */
            data: unknown;
            /**
             * @description the environment of the event's record
             * @enum {string}
             */
            environment: "test" | "live";
            /** @description `evt_...`; the same on every delivery of the event (`X-Event-Id`) */
            id: string;
            /** @description the id of `data` (a refund's events: the refund) */
            objectId: string;
            /** @description strictly increasing per object (within merchant and environment), from 1: a receiver can drop an event older than one it has */
            sequence: number;
            /** @enum {string} */
            type: "payment.requires_action" | "payment.processing" | "payment.succeeded" | "payment.failed" | "payment.voided" | "payment.partially_refunded" | "payment.refunded" | "refund.succeeded" | "refund.failed" | "dispute.created" | "dispute.updated" | "dispute.evidence_due_soon" | "dispute.closed" | "subscription.activated" | "subscription.charge_succeeded" | "subscription.charge_failed" | "subscription.past_due" | "subscription.payment_action_required" | "subscription.cancelled";
        };
        EventDelivery: {
            /**
             * Format: date-time
             * @description when the attempt began
             */
            at: string;
            /** @description 1, 2, ... per destination */
            attempt: number;
            durationMs: number | null;
            /** @description the webhook endpoint; null: the record's callbackUrl */
            endpointId: string | null;
            /** @description why the attempt failed (`HTTP 500`, `timeout`, `network error: ...`) */
            error: string | null;
            /** @description the receiver's HTTP status; null: no answer */
            httpStatus: number | null;
            /**
             * @description `pending` while the attempt is in flight
             * @enum {string}
             */
            status: "pending" | "succeeded" | "failed";
            url: string;
        };
        EventWithDeliveries: {
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            /** @description the object as the API returned it when the event happened */
            data: unknown;
            /** @description every attempt, oldest first */
            deliveries: components["schemas"]["EventDelivery"][];
            /**
             * @description the environment of the event's record
             * @enum {string}
             */
            environment: "test" | "live";
            /** @description `evt_...`; the same on every delivery of the event (`X-Event-Id`) */
            id: string;
            /** @description the id of `data` (a refund's events: the refund) */
            objectId: string;
            /** @description strictly increasing per object (within merchant and environment), from 1: a receiver can drop an event older than one it has */
            sequence: number;
            /** @enum {string} */
            type: "payment.requires_action" | "payment.processing" | "payment.succeeded" | "payment.failed" | "payment.voided" | "payment.partially_refunded" | "payment.refunded" | "refund.succeeded" | "refund.failed" | "dispute.created" | "dispute.updated" | "dispute.evidence_due_soon" | "dispute.closed" | "subscription.activated" | "subscription.charge_succeeded" | "subscription.charge_failed" | "subscription.past_due" | "subscription.payment_action_required" | "subscription.cancelled";
        };
        Invoice: {
            amount: number;
            attempts: number;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            currency: string;
            /** @description `hard`: never retried with this card (a new card is needed); `soft`: retried on schedule */
            declineType: ("hard" | "soft") | null;
            failureCode: string | null;
            failureMessage: string | null;
            /** @description where the customer authenticates this invoice’s charge; null unless it waits for that */
            hostedUrl: string | null;
            id: string;
            nextAttemptAt: string | null;
            paidAt: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            periodEnd: string;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            periodStart: string;
            /**
             * @description `requires_action`: its charge waits for the customer to authenticate at `hostedUrl`; `processing`: the processor decides its charge later; no other charge of the invoice starts meanwhile
             * @enum {string}
             */
            status: "open" | "requires_action" | "processing" | "paid" | "void" | "uncollectible";
            subscriptionId: string;
        };
        Payment: {
            amount: number;
            /** @description the sum of its open, lost and accepted disputes */
            amountDisputed: number;
            /** @description max(0, amount - amountRefunded - the refund in flight - amountDisputed) */
            amountRefundable: number;
            amountRefunded: number;
            billing: {
                [key: string]: unknown;
            } | null;
            callbackUrl: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            currency: string;
            /** @description as sent; with `customerId`, the email, name and externalId of that customer (`email` null when it has none) */
            customer: {
                email: string | null;
                externalId?: string;
                name?: string;
            };
            /** @description the customer (`cus_...`) the payment was made for, else null */
            customerId: string | null;
            description: string | null;
            /** @description one of its disputes is open: refunds are refused (409 `charge_disputed`) */
            disputed: boolean;
            /** @enum {string} */
            environment: "test" | "live";
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            expiresAt: string;
            externalId: string;
            failureCode: string | null;
            failureMessage: string | null;
            id: string;
            metadata: {
                [key: string]: string;
            } | null;
            /** @description While `requires_action`: where to send the customer to authenticate; else null. */
            nextAction: {
                /** @constant */
                type: "redirect";
                url: string;
            } | null;
            /** @description the customer's saved payment method charged, else null */
            paymentMethodId: string | null;
            processor: string;
            providerTransactionId: string | null;
            redirectUrl: string | null;
            returnUrl: string | null;
            saveCardEnabled: boolean;
            /**
             * @description `requires_action`: the customer authenticates at `nextAction.url` (3-D Secure), voided at `expiresAt` if not; `processing`: the processor decides later (no expiry).
             * @enum {string}
             */
            status: "created" | "requires_action" | "processing" | "succeeded" | "failed" | "refunded" | "voided" | "partially_refunded";
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            updatedAt: string;
        };
        PaymentMethod: {
            card: {
                brand: string | null;
                expMonth: number | null;
                expYear: number | null;
                last4: string | null;
            };
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            customerId: string;
            /** @description `pm_...` */
            id: string;
            /** @description the processor that verified and keeps the card (`sandbox`, `stripe`) */
            processor: string;
        };
        Refund: {
            amount: number;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            currency: string;
            externalId: string;
            failureCode: string | null;
            failureMessage: string | null;
            id: string;
            paymentAmountRefundable: number;
            paymentAmountRefunded: number;
            paymentId: string;
            providerRefundId: string | null;
            reason: string | null;
            /** @enum {string} */
            status: "pending" | "succeeded" | "failed";
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            updatedAt: string;
        };
        ResentEvent: {
            /** @description the new attempts, `pending`: one per destination (none when the event has nowhere to go) */
            deliveries: components["schemas"]["EventDelivery"][];
        };
        Subscription: {
            amount: number;
            billingIntervalDays: number;
            callbackUrl: string | null;
            cancellationReason: string | null;
            cancelledAt: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            currency: string;
            currentPeriodEnd: string | null;
            currentPeriodStart: string | null;
            customer: {
                email: string;
                externalId?: string;
                name?: string;
            } | null;
            /** @description the customer (`cus_...`) named at creation with `customerId`, whose default pays its later periods; else null */
            customerId: string | null;
            description: string | null;
            /** @enum {string} */
            environment: "test" | "live";
            externalId: string;
            id: string;
            /** @description the latest period’s invoice, as the invoice list shows it (`hostedUrl` and `declineType` included) */
            latestInvoice: components["schemas"]["Invoice"] | null;
            metadata: {
                [key: string]: string;
            } | null;
            phases: {
                amount: number;
                billingIntervalDays: number;
                id: string;
                iterations: number | null;
                name: string;
                order: number;
            }[];
            processor: string;
            redirectUrl: string | null;
            retryScheduleDays: number[];
            returnUrl: string | null;
            /** @enum {string} */
            status: "created" | "pending" | "active" | "past_due" | "cancelled";
            /** @description the test clock it lives on (its dates are the clock’s time), or null */
            testClock: string | null;
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            updatedAt: string;
        };
        TestClock: {
            /**
             * Format: date-time
             * @description real time
             */
            createdAt: string;
            /**
             * Format: date-time
             * @description the clock's time (moves in steps while `advancing`)
             */
            frozenTime: string;
            /** @description `clk_...` */
            id: string;
            name: string | null;
            /**
             * @description `advancing` until everything due up to the advance’s `frozenTime` happened and every charge is decided
             * @enum {string}
             */
            status: "ready" | "advancing";
            /** @description its subscriptions not cancelled (at most 100) */
            subscriptionCount: number;
        };
        WebhookEndpoint: {
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            description: string | null;
            enabledEvents: string[];
            id: string;
            /** @enum {string} */
            status: "enabled" | "disabled";
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            updatedAt: string;
            url: string;
        };
        WebhookEndpointWithSecret: {
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            createdAt: string;
            description: string | null;
            enabledEvents: string[];
            id: string;
            /** @description `whsec_...`: the signing secret, shown only here (create and rotate-secret) */
            secret: string;
            /** @enum {string} */
            status: "enabled" | "disabled";
            /**
             * Format: date-time
             * @description ISO 8601 UTC timestamp with milliseconds
             */
            updatedAt: string;
            url: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    listCustomers: {
        parameters: {
            query?: {
                cursor?: string;
                email?: string;
                externalId?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        customers: components["schemas"]["Customer"][];
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createCustomer: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** Format: email */
                    email?: string;
                    /** @description the merchant's own identifier; the idempotency key of the create */
                    externalId: string;
                    /** @description free-form: at most 50 keys of <= 40 characters, string values of <= 500 */
                    metadata?: {
                        [key: string]: string;
                    };
                    name?: string;
                    /** @description `clk_...` (test keys only): the customer lives on the test clock’s time */
                    testClock?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description Bad request: `validation_error`, `external_id_conflict` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `concurrent_request`, `test_clock_advancing` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getCustomer: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                customerId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    updateCustomer: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                customerId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description one of the customer’s payment methods (else 404), or null: no default */
                    defaultPaymentMethodId?: string | null;
                    email?: string | null;
                    /** @description replaces the whole metadata; null clears it */
                    metadata?: {
                        [key: string]: string;
                    } | null;
                    name?: string | null;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Customer"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listPaymentMethods: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                customerId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        paymentMethods: components["schemas"]["PaymentMethod"][];
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    attachPaymentMethod: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                customerId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description the card to verify and keep (sandbox test tokens; Stripe: `pm_...`); never a `pm_` id of ours */
                    cardToken: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PaymentMethod"];
                };
            };
            /** @description Bad request: `validation_error`, `invalid_card_token`, `provider_rejected` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Error: `card_declined` */
            402: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error: `provider_not_configured` */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad gateway: `provider_invalid_response` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `provider_unavailable`, `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deletePaymentMethod: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                customerId: string;
                paymentMethodId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedPaymentMethod"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `payment_method_in_use` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    setupPaymentMethod: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                customerId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: uri
                     * @description where the page sends the customer back (Stripe needs one; the sandbox goes without)
                     */
                    returnUrl?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        paymentMethodId: string;
                        redirectUrl: string;
                    };
                };
            };
            /** @description Bad request: `validation_error`, `provider_rejected` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error: `provider_not_configured` */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad gateway: `provider_invalid_response` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `provider_unavailable`, `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listDisputes: {
        parameters: {
            query?: {
                cursor?: string;
                limit?: number;
                paymentId?: string;
                status?: "needs_response" | "under_review" | "won" | "lost" | "accepted";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        disputes: components["schemas"]["Dispute"][];
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getDispute: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                disputeId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Dispute"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    acceptDispute: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                disputeId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Dispute"];
                };
            };
            /** @description Bad request: `provider_rejected` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `dispute_not_updatable` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error: `provider_not_configured` */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad gateway: `provider_invalid_response` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `provider_unavailable`, `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    submitDisputeEvidence: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                disputeId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description true: send it to the processor (the dispute goes `under_review`); false: keep it as a draft */
                    submit: boolean;
                    /** @description the merchant's evidence, 1..20000 characters */
                    text: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Dispute"];
                };
            };
            /** @description Bad request: `validation_error`, `provider_rejected` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `dispute_not_updatable` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error: `provider_not_configured` */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad gateway: `provider_invalid_response` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `provider_unavailable`, `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listEvents: {
        parameters: {
            query?: {
                createdFrom?: string;
                createdTo?: string;
                cursor?: string;
                limit?: number;
                objectId?: string;
                type?: "payment.requires_action" | "payment.processing" | "payment.succeeded" | "payment.failed" | "payment.voided" | "payment.partially_refunded" | "payment.refunded" | "refund.succeeded" | "refund.failed" | "dispute.created" | "dispute.updated" | "dispute.evidence_due_soon" | "dispute.closed" | "subscription.activated" | "subscription.charge_succeeded" | "subscription.charge_failed" | "subscription.past_due" | "subscription.payment_action_required" | "subscription.cancelled" | "payment.*" | "refund.*" | "dispute.*" | "subscription.*";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        events: components["schemas"]["Event"][];
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getEvent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                eventId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventWithDeliveries"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    resendEvent: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                eventId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description `we_...`: resend to this endpoint only (enabled, of the caller; its filter need not match). Absent: the callbackUrl and every endpoint the event went to that is still enabled */
                    endpointId?: string;
                };
            };
        };
        responses: {
            /** @description Accepted */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ResentEvent"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `webhook_endpoint_disabled` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listApiKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        apiKeys: components["schemas"]["ApiKey"][];
                    };
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listPayments: {
        parameters: {
            query?: {
                createdFrom?: string;
                createdTo?: string;
                cursor?: string;
                externalId?: string;
                limit?: number;
                status?: "created" | "requires_action" | "processing" | "succeeded" | "failed" | "refunded" | "voided" | "partially_refunded";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                        payments: components["schemas"]["Payment"][];
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createPayment: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description major units (12.34 USD, 1200 JPY); at most the currency's decimals, > 0, <= 1,000,000,000 */
                    amount: number;
                    billing?: {
                        [key: string]: unknown;
                    };
                    /** Format: uri */
                    callbackUrl?: string;
                    /** @description saved-card token flow; a bad token gives 400 invalid_card_token */
                    cardToken?: string;
                    /** @description ISO 4217 alphabetic code, any case; answered upper case */
                    currency: string;
                    /** @description required unless `customerId` names one of the merchant’s customers */
                    customer?: {
                        /** Format: email */
                        email: string;
                        externalId?: string;
                        name?: string;
                    };
                    /** @description a customer (`cus_...`) instead of `customer` (both: 400); its email, name and externalId are repeated */
                    customerId?: string;
                    description?: string;
                    /** @description the merchant's own identifier; the idempotency key of the create */
                    externalId: string;
                    /** @description free-form: at most 50 keys of <= 40 characters, string values of <= 500 */
                    metadata?: {
                        [key: string]: string;
                    };
                    /** @description one of the customer's payment methods (`pm_...`, with `customerId`): the token flow with that card. With neither it nor `cardToken`: the customer's default (token flow), or the hosted flow when it has none or `saveCardEnabled` is true */
                    paymentMethodId?: string;
                    /** Format: uri */
                    returnUrl?: string;
                    saveCardEnabled?: boolean;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Payment"];
                };
            };
            /** @description Bad request: `validation_error`, `invalid_card_token`, `external_id_conflict` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited`, `quota_exceeded` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error: `provider_not_configured` */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad gateway: `provider_invalid_response` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `provider_unavailable`, `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getPayment: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                paymentId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Payment"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createRefund: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                paymentId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description major units; omitted: the whole remaining refundable balance */
                    amount?: number;
                    /** @description if sent, must be the payment's currency */
                    currency?: string;
                    /** @description the merchant's own identifier; the idempotency key of the create */
                    externalId: string;
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Refund"];
                };
            };
            /** @description Bad request: `validation_error`, `external_id_conflict` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `payment_not_refundable`, `refund_in_flight`, `charge_disputed` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unprocessable: `amount_exceeds_refundable` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited`, `quota_exceeded` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad gateway: `provider_invalid_response` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `provider_unavailable`, `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listRefunds: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                paymentId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        refunds: components["schemas"]["Refund"][];
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getRefund: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                refundId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Refund"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listSubscriptions: {
        parameters: {
            query?: {
                cursor?: string;
                externalId?: string;
                limit?: number;
                status?: "created" | "pending" | "active" | "past_due" | "cancelled";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                        subscriptions: components["schemas"]["Subscription"][];
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createSubscription: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description evergreen amount per period, major units */
                    amount: number;
                    /** @description whole days between charges, 1..3650 */
                    billingIntervalDays: number;
                    /** Format: uri */
                    callbackUrl?: string;
                    /** @description saved-card token; without, the customer authorizes a card at `redirectUrl` */
                    cardToken?: string;
                    /** @description ISO 4217 alphabetic code, any case; answered upper case */
                    currency: string;
                    customer?: {
                        /** Format: email */
                        email: string;
                        externalId?: string;
                        name?: string;
                    };
                    /** @description a customer (`cus_...`) instead of `customer` (both: 400); its email, name and externalId are repeated, and each charge after the first uses the customer's default payment method at that moment */
                    customerId?: string;
                    description?: string;
                    /** @description the merchant's own identifier; the idempotency key of the create */
                    externalId: string;
                    /** @description free-form: at most 50 keys of <= 40 characters, string values of <= 500 */
                    metadata?: {
                        [key: string]: string;
                    };
                    /** @description one of the customer's payment methods (`pm_...`, with `customerId`) for the first charge. With neither it nor `cardToken`: the customer's default, or the hosted authorization when it has none */
                    paymentMethodId?: string;
                    /** @description run in order before the evergreen phase */
                    phases?: {
                        /** @description per period, major units; 0 is a free phase */
                        amount: number;
                        /** @description whole days between charges, 1..3650 */
                        billingIntervalDays: number;
                        /** @description billing periods in this phase */
                        iterations: number;
                        name: string;
                    }[];
                    /** @description billing days before each retry of a failed charge (default [1, 3, 5]) */
                    retryScheduleDays?: number[];
                    /** Format: uri */
                    returnUrl?: string;
                    /** @description `clk_...` (test keys only): the subscription lives on the test clock’s time */
                    testClock?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            /** @description Bad request: `validation_error`, `invalid_card_token`, `external_id_conflict` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `test_clock_advancing`, `test_clock_full` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited`, `quota_exceeded` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error: `provider_not_configured` */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Bad gateway: `provider_invalid_response` */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `provider_unavailable`, `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getSubscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                subscriptionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    cancelSubscription: {
        parameters: {
            query?: {
                notify?: "true" | "false";
                reason?: string;
            };
            header?: never;
            path: {
                subscriptionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listInvoices: {
        parameters: {
            query?: {
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path: {
                subscriptionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        invoices: components["schemas"]["Invoice"][];
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    updateSubscriptionPaymentMethod: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                subscriptionId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description the new saved-card token; without, the customer enters a card at the answer’s `redirectUrl` */
                    cardToken?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Subscription"];
                };
            };
            /** @description Bad request: `validation_error`, `invalid_card_token`, `provider_rejected` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `subscription_not_updatable` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Internal error: `provider_not_configured` */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `provider_unavailable`, `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listTestClocks: {
        parameters: {
            query?: {
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description pass as `cursor` for the next page; null on the last page */
                        nextCursor: string | null;
                        testClocks: components["schemas"]["TestClock"][];
                    };
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createTestClock: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: date-time
                     * @description the clock's starting time (default now)
                     */
                    frozenTime?: string;
                    name?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TestClock"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getTestClock: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                testClockId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TestClock"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteTestClock: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                testClockId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedTestClock"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `test_clock_advancing` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    advanceTestClock: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                testClockId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * Format: date-time
                     * @description later than the clock's time, at most 5 years ahead (400 `validation_error` otherwise)
                     */
                    frozenTime: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TestClock"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `test_clock_advancing` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhookEndpoints: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        webhookEndpoints: components["schemas"]["WebhookEndpoint"][];
                    };
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description free text for the merchant, <= 500 characters */
                    description?: string | null;
                    /** @description the events sent to this endpoint (1..64 filters) */
                    enabledEvents: string[];
                    /**
                     * Format: uri
                     * @description http(s); loopback and private addresses only for test keys (the callback rules)
                     */
                    url: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEndpointWithSecret"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Conflict: `webhook_endpoint_limit` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhookEndpointId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEndpoint"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhookEndpointId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedWebhookEndpoint"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    updateWebhookEndpoint: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhookEndpointId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description free text for the merchant, <= 500 characters */
                    description?: string | null;
                    /** @description the events sent to this endpoint (1..64 filters) */
                    enabledEvents?: string[];
                    /** @enum {string} */
                    status?: "enabled" | "disabled";
                    /** Format: uri */
                    url?: string;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEndpoint"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    rotateWebhookEndpointSecret: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                webhookEndpointId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description how long the previous secret still signs, 0..168 hours (default 24) */
                    overlapHours?: number;
                };
            };
        };
        responses: {
            /** @description OK */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookEndpointWithSecret"];
                };
            };
            /** @description Bad request: `validation_error` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unauthorized: `unauthorized` */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Forbidden: `forbidden`, `merchant_inactive` */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Not found: `not_found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Too many requests: `rate_limited` */
            429: {
                headers: {
                    /** @description Requests allowed at once (the bucket size; RATE_LIMIT_BURST for an API key). Sent on every response of an authenticated route while limits are on. */
                    "RateLimit-Limit"?: number;
                    /** @description Requests left now (0 when limited). */
                    "RateLimit-Remaining"?: number;
                    /** @description Whole seconds until the full limit is available again. */
                    "RateLimit-Reset"?: number;
                    /** @description Whole seconds to wait before retrying. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Service unavailable: `service_unavailable` */
            503: {
                headers: {
                    /** @description Whole seconds to wait before retrying; sent with `service_unavailable`. */
                    "Retry-After"?: number;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
