import type { ParameterizedContext } from 'koa';
import type { Logger } from '../logger';
import type { KeyEnvironment, KeyRole } from '../db/entities';

/** Who is calling, once the Authorization header has been verified. */
export interface Caller {
  merchantId: string;
  apiKeyId: string;
  environment: KeyEnvironment;
  role: KeyRole;
}

export interface AppState {
  requestId: string;
  log: Logger;
  /** Parsed JSON body, set by the JSON body middleware when a body was sent. */
  body?: unknown;
  caller?: Caller;
}

export type AppContext = ParameterizedContext<AppState>;
