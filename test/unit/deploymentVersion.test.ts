import { msToTs } from '@temporalio/common/lib/time';
import { promotionDecision } from '../../src/temporal/deploymentVersion';

/** Which starting worker may make its version current (src/temporal/deploymentVersion.ts). */
const version = (buildId: string, createdSeconds: number) => ({
  deploymentVersion: { deploymentName: 'payment-platform', buildId },
  createTime: msToTs(createdSeconds * 1000),
});

describe('promotionDecision', () => {
  it('promotes the first version of a new deployment', () => {
    expect(promotionDecision(undefined, 'b1')).toBe('promote');
    expect(promotionDecision({ versionSummaries: [version('b1', 100)] }, 'b1')).toBe('promote');
  });

  it('leaves a version that is already current alone', () => {
    const info = {
      versionSummaries: [version('b1', 100)],
      routingConfig: { currentDeploymentVersion: { deploymentName: 'payment-platform', buildId: 'b1' } },
    };
    expect(promotionDecision(info, 'b1')).toBe('already-current');
  });

  it('promotes the newest version over the current one (a deploy)', () => {
    const info = {
      versionSummaries: [version('b1', 100), version('b2', 200)],
      routingConfig: { currentDeploymentVersion: { deploymentName: 'payment-platform', buildId: 'b1' } },
    };
    expect(promotionDecision(info, 'b2')).toBe('promote');
  });

  it('never lets an older version take the deployment back (a restarting old worker)', () => {
    const info = {
      versionSummaries: [version('b1', 100), version('b2', 200)],
      routingConfig: { currentDeploymentVersion: { deploymentName: 'payment-platform', buildId: 'b2' } },
    };
    expect(promotionDecision(info, 'b1')).toBe('superseded');
  });
});
