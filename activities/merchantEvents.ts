/**
 * The per-record delivery activities of runs that began before deliveries had a queue of their
 * own (decision 0069, patch EVENT_DELIVERY_QUEUE). Their histories still name them, and a run in
 * the middle of delivering still calls them: every undelivered callback event of the last 3 days
 * was handed over as a delivery job (Migration20261203000000DeliveryJobs), so there is nothing
 * left for them to do. New runs never call them.
 */
export function createMerchantEventActivities() {
  return {
    /** Nothing for a record's run to deliver: its events' deliveries are delivery jobs. */
    async undeliveredEventIds(_resourceId: string): Promise<string[]> {
      return [];
    },

    /** Handed over: the merchant's delivery workflow delivers the event's delivery jobs. */
    async deliverMerchantEvent(_eventId: string): Promise<void> {},
  };
}
