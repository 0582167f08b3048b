/** The floor's only activity, run as a local activity: nothing, so that what is left is Temporal's own cost. */
export function createFloorActivities() {
  return {
    async noop(): Promise<void> {},
  };
}

export type FloorActivities = ReturnType<typeof createFloorActivities>;
