import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122000000Foundation } from './Migration20261122000000Foundation';
import { Migration20261122010000Payments } from './Migration20261122010000Payments';
import { Migration20261122020000Refunds } from './Migration20261122020000Refunds';
import { Migration20261122030000Emails } from './Migration20261122030000Emails';
import { Migration20261122040000Subscriptions } from './Migration20261122040000Subscriptions';
import { Migration20261123000000EmailClaims } from './Migration20261123000000EmailClaims';
import { Migration20261123010000SweepWatermarks } from './Migration20261123010000SweepWatermarks';
import { Migration20261124000000OutboxRelay } from './Migration20261124000000OutboxRelay';
import { Migration20261125000000ProviderCallSent } from './Migration20261125000000ProviderCallSent';
import { Migration20261126000000MerchantProviders } from './Migration20261126000000MerchantProviders';
import { Migration20261127120000PaymentExpiryIndex } from './Migration20261127120000PaymentExpiryIndex';
import { Migration20261128000000ListsAndRateLimits } from './Migration20261128000000ListsAndRateLimits';
import { Migration20261129000000MerchantEventClaims } from './Migration20261129000000MerchantEventClaims';
import { Migration20261130000000PaymentAuthentication } from './Migration20261130000000PaymentAuthentication';
import { Migration20261130010000Disputes } from './Migration20261130010000Disputes';
import { Migration20261130020000InvoiceDeclines } from './Migration20261130020000InvoiceDeclines';
import { Migration20261130050000InvoiceWaits } from './Migration20261130050000InvoiceWaits';
import { Migration20261201020000InvoiceProcessingIndex } from './Migration20261201020000InvoiceProcessingIndex';
import { Migration20261202000000EventLog } from './Migration20261202000000EventLog';
import { Migration20261202010000SigningSecrets } from './Migration20261202010000SigningSecrets';
import { Migration20261202020000WebhookEndpoints } from './Migration20261202020000WebhookEndpoints';
import { Migration20261203000000DeliveryJobs } from './Migration20261203000000DeliveryJobs';
import { Migration20261204000000CancelIntent } from './Migration20261204000000CancelIntent';
import { Migration20261206000000QuotaIndexes } from './Migration20261206000000QuotaIndexes';
import { Migration20261210000000Customers } from './Migration20261210000000Customers';
import { Migration20261211000000SubscriptionCustomers } from './Migration20261211000000SubscriptionCustomers';
import { Migration20261211500000CustomerClockTime } from './Migration20261211500000CustomerClockTime';
import { Migration20261212000000TestClocks } from './Migration20261212000000TestClocks';
import { Migration20261213000000EmailDates } from './Migration20261213000000EmailDates';
import { Migration20261214000000SubscriptionCustomerIndex } from './Migration20261214000000SubscriptionCustomerIndex';

/** Every migration, in order. Add new ones at the end; never edit a released one. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261122000000Foundation', class: Migration20261122000000Foundation },
  { name: 'Migration20261122010000Payments', class: Migration20261122010000Payments },
  { name: 'Migration20261122020000Refunds', class: Migration20261122020000Refunds },
  { name: 'Migration20261122030000Emails', class: Migration20261122030000Emails },
  { name: 'Migration20261122040000Subscriptions', class: Migration20261122040000Subscriptions },
  { name: 'Migration20261123000000EmailClaims', class: Migration20261123000000EmailClaims },
  { name: 'Migration20261123010000SweepWatermarks', class: Migration20261123010000SweepWatermarks },
  { name: 'Migration20261124000000OutboxRelay', class: Migration20261124000000OutboxRelay },
  { name: 'Migration20261125000000ProviderCallSent', class: Migration20261125000000ProviderCallSent },
  { name: 'Migration20261126000000MerchantProviders', class: Migration20261126000000MerchantProviders },
  { name: 'Migration20261127120000PaymentExpiryIndex', class: Migration20261127120000PaymentExpiryIndex },
  { name: 'Migration20261128000000ListsAndRateLimits', class: Migration20261128000000ListsAndRateLimits },
  { name: 'Migration20261129000000MerchantEventClaims', class: Migration20261129000000MerchantEventClaims },
  { name: 'Migration20261130000000PaymentAuthentication', class: Migration20261130000000PaymentAuthentication },
  { name: 'Migration20261130010000Disputes', class: Migration20261130010000Disputes },
  { name: 'Migration20261130020000InvoiceDeclines', class: Migration20261130020000InvoiceDeclines },
  { name: 'Migration20261130050000InvoiceWaits', class: Migration20261130050000InvoiceWaits },
  { name: 'Migration20261201020000InvoiceProcessingIndex', class: Migration20261201020000InvoiceProcessingIndex },
  { name: 'Migration20261202000000EventLog', class: Migration20261202000000EventLog },
  { name: 'Migration20261202010000SigningSecrets', class: Migration20261202010000SigningSecrets },
  { name: 'Migration20261202020000WebhookEndpoints', class: Migration20261202020000WebhookEndpoints },
  { name: 'Migration20261203000000DeliveryJobs', class: Migration20261203000000DeliveryJobs },
  { name: 'Migration20261204000000CancelIntent', class: Migration20261204000000CancelIntent },
  { name: 'Migration20261206000000QuotaIndexes', class: Migration20261206000000QuotaIndexes },
  { name: 'Migration20261210000000Customers', class: Migration20261210000000Customers },
  { name: 'Migration20261211000000SubscriptionCustomers', class: Migration20261211000000SubscriptionCustomers },
  { name: 'Migration20261211500000CustomerClockTime', class: Migration20261211500000CustomerClockTime },
  { name: 'Migration20261212000000TestClocks', class: Migration20261212000000TestClocks },
  { name: 'Migration20261213000000EmailDates', class: Migration20261213000000EmailDates },
  {
    name: 'Migration20261214000000SubscriptionCustomerIndex',
    class: Migration20261214000000SubscriptionCustomerIndex,
  },
];
