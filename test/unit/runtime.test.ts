/**
 * Every npm script runs on the Node 24 that the `node` devDependency installs into
 * node_modules/.bin (decision 0052), whatever the system Node is; the processes the tests spawn
 * inherit it through process.execPath.
 */
describe('runtime', () => {
  it('is Node 24 or later', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24);
  });
});
