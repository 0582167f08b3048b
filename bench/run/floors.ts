import { measureUpdateWithStart, type Floor, type FloorKind, type UpdateWithStartFloor } from '../floor/scenarios';
import { DURATION_S, FLOOR, WORK_FLOOR } from './knobs';
import { combine, mirrored, type Arm } from './measure';

/** The floors a group measures beside its product scenario: the bare floor, and a work floor. */
export interface GroupFloors {
  floor?: UpdateWithStartFloor;
  work?: UpdateWithStartFloor;
}

type FloorArm = { key: keyof GroupFloors; arm: Arm<UpdateWithStartFloor> };

/**
 * A group's floor arms at `callers`: the bare floor (unless BENCH_FLOOR=0), then `work` (a
 * payment's or a refund's required work; unless BENCH_WORK_FLOOR=0). `beside` names the group.
 */
export function floorArms(
  floor: Floor | undefined,
  beside: string,
  callers: number,
  work: { kind: Exclude<FloorKind, 'bare'>; name: string; paymentIds?: string[] },
): FloorArm[] {
  if (!floor || !FLOOR) return [];
  const one = callers === 1 ? ', 1 caller' : '';
  const arm =
    (name: string, kind: FloorKind, paymentIds?: string[]): Arm<UpdateWithStartFloor> =>
    (warmupS) =>
      measureUpdateWithStart(floor, name, callers, { warmupS, durationS: DURATION_S }, kind, paymentIds);
  return [
    { key: 'floor', arm: arm(`floor: update-with-start${one} (beside ${beside})`, 'bare') },
    ...(WORK_FLOOR ? [{ key: 'work' as const, arm: arm(`${work.name}${one}`, work.kind, work.paymentIds) }] : []),
  ];
}

/**
 * A group measured in mirrored rounds: its floor arms and the product's arm; each floor's slices
 * combined, and the product's slices as measured (the caller combines them with its checks).
 */
export async function measureGroup<P>(
  floors: FloorArm[],
  product: Arm<P>,
): Promise<{ floors: GroupFloors; product: P[] }> {
  const slices = await mirrored<UpdateWithStartFloor | P>([...floors.map((f) => f.arm), product]);
  const combined: GroupFloors = {};
  floors.forEach((f, i) => (combined[f.key] = combine(slices[i] as UpdateWithStartFloor[])));
  return { floors: combined, product: slices[floors.length] as P[] };
}
