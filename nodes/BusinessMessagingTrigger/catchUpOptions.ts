/** The catch-up's defaults and bounds, shared by the node's description, the catch-up and the webhook's late-delivery cutoff. */
export const DEFAULT_CATCH_UP_INTERVAL_SECONDS = 60;
export const MIN_CATCH_UP_INTERVAL_SECONDS = 10;
export const DEFAULT_MAX_RECOVERED = 500;
/** Never further back than this, whatever the watermark says (how long the service keeps messages is not shown). */
export const MAX_CATCH_UP_DAYS = 7;
/**
 * A delivery whose event is older than this when webhook() runs is refused (503). n8n still has
 * to store the execution and answer before the service's ~8 s timeout: 3 s are left for that
 * (measured under load: 2xx at most 3.9 s after the event, queue mode included).
 */
export const DEFAULT_LATE_DELIVERY_CUTOFF_SECONDS = 5;
/** The service's delivery timeout (about 8 s) plus margin for the answer and clock skew: older messages have had their one delivery. */
export const SETTLE_MS = 15_000;
