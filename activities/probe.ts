import type { ActivityDeps } from './deps';

export function createProbeActivities({ orm }: ActivityDeps) {
  return {
    async probeDatabase(): Promise<string> {
      const rows: Array<{ now: Date }> = await orm.em.getConnection().execute('select now() as now');
      return new Date(rows[0]!.now).toISOString();
    },
  };
}
