import type { KeyEnvironment } from '../db/entities';

/**
 * Whose records a lookup may see: the caller's merchant and the environment of its key.
 * A test key never sees a live record, nor a live key a test one (PRODUCT.md, "Production
 * profile"); a record of the other environment is answered as not found.
 */
export interface RecordScope {
  merchantId: string;
  environment: KeyEnvironment;
}
