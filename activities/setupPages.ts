import type { ActivityDeps } from './deps';
import { lookAtSetupPage } from '../src/app/setupPages';
import type { SetupPage, SetupPageAnswer } from '../src/rules/setupPages';

/** The activity of a customer's card setup page workflow (decision 0089). */
export function createSetupPageActivities(deps: ActivityDeps) {
  const { orm, providers, logger, starters } = deps;
  return {
    /** Asks the processor what became of the page and keeps its card for the customer, once. */
    lookAtSetupPage(page: SetupPage): Promise<SetupPageAnswer> {
      return lookAtSetupPage({ em: orm.em, providers, logger, subscriptions: starters.subscription }, page);
    },
  };
}
