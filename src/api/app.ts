import Koa from 'koa';
import Router from '@koa/router';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Connection } from '@temporalio/client';
import type { Logger } from '../logger';
import { Authenticator } from '../auth/authenticator';
import type { AppState } from './context';
import { errorHandler } from './middleware/errorHandler';
import { requestContext } from './middleware/requestContext';
import { authenticate } from './middleware/authenticate';
import { mountRoutes, type RouteDef } from './routing';
import { buildOpenApi } from './openapi';
import { apiKeyRoutes } from './routes/apiKeys';
import { healthRoutes } from './routes/health';
import { docsRoutes } from './routes/docs';

export interface AppDeps {
  orm: MikroORM;
  temporal: Connection;
  logger: Logger;
  authCacheTtlMs: number;
  publicBaseUrl?: string;
  /** Routes mounted after the product's own, through the same pipeline (used by tests). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous route list
  extraRoutes?: RouteDef<any, any, any>[];
}

export function allRoutes(deps: Pick<AppDeps, 'orm'>) {
  const em = deps.orm.em;
  return [...apiKeyRoutes(em)];
}

export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.proxy = true;
  // The error middleware answers every error; Koa's default handler would print stacks.
  app.silent = true;

  const routes = [...allRoutes(deps), ...(deps.extraRoutes ?? [])];
  const authenticator = new Authenticator(deps.orm.em, deps.authCacheTtlMs, deps.logger);

  const health = healthRoutes({
    database: async () => {
      await deps.orm.em.getConnection().execute('select 1');
    },
    temporal: async () => {
      await deps.temporal.withDeadline(Date.now() + 2000, () => deps.temporal.healthService.check({}));
    },
  });
  const docs = docsRoutes(buildOpenApi(routes, deps.publicBaseUrl));
  const api = new Router<AppState>();
  mountRoutes(api, routes, authenticate(authenticator));

  app.use(requestContext(deps.logger));
  app.use(errorHandler());
  app.use(health.routes());
  app.use(docs.routes());
  app.use(api.routes());
  app.use(api.allowedMethods({ throw: true }));
  return app;
}
